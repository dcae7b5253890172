"""make bench's time left: runs' seconds from earlier runs, then from the
boots of the run under way, and the lines that say where a run is."""
import json

import pytest

from lab import bench, benchtime, scenarios

from test_bench import steps


def test_a_boots_seconds_are_shared_by_its_runs_and_this_run_comes_first():
    clock = benchtime.Clock({"t/a:vanilla": [10.0, 30.0], "t/b:patched": [4.0]})
    assert clock.run("t/a:vanilla") == 20.0          # the median of earlier runs
    assert clock.run("t/new:x") == 12.0              # never seen: the median of all
    clock.record(["t/a:vanilla", "t/b:patched"], 8.0)
    assert clock.run("t/a:vanilla") == 4.0           # this run's boots replace history
    assert clock.left([["t/a:vanilla", "t/b:patched"], ["t/b:patched"]]) == 12.0


def test_each_boot_says_which_boot_and_scenarios_of_how_many_and_the_time_left():
    clear, enable = steps()
    every = bench.boots([clear, enable])
    # clear: 2 repeats of vanilla, fill, patched (+ floor); enable: 1 of vanilla, patched
    assert [(b.repeat, b.key[0], b.runs) for b in every] == [
        (0, "vanilla", ["arm64-split-skip-level/clear:vanilla",
                        "arm64-split-skip-level/enable:vanilla"]),
        (0, "split-fill", ["arm64-split-skip-level/clear:fill"]),
        (0, "patched", ["arm64-split-skip-level/clear:patched",
                        "arm64-split-skip-level/clear:floor",
                        "arm64-split-skip-level/enable:patched"]),
        (1, "vanilla", ["arm64-split-skip-level/clear:vanilla"]),
        (1, "split-fill", ["arm64-split-skip-level/clear:fill"]),
        (1, "patched", ["arm64-split-skip-level/clear:patched",
                        "arm64-split-skip-level/clear:floor"])]
    clock = benchtime.Clock({r: [30.0] for b in every for r in b.runs})
    assert bench.progress(0, every, [clear, enable], clock) == (
        "boot 1 of 6, scenarios 1, 2 of 2; about 5 min of boots left")   # 10 runs of 30 s
    clock.record(every[0].runs, 20.0)                  # the first boot took 20 s, not 60
    assert bench.progress(3, every, [clear, enable], clock) == (
        "boot 4 of 6, scenario 1 of 2; about 2 min of boots left")       # 10 + 30 + 60 s
    assert every[0].description == "boot arm64-vanilla []"


def test_earlier_runs_name_their_boots_runs_or_are_read_with_todays_scenarios(tmp_path):
    clear, enable = steps()
    old = {"scenarios": [clear.key, enable.key],      # saved before boot_runs
           "phases": [{"what": "build arm64-vanilla", "seconds": 300.0},
                      {"what": "boot arm64-vanilla [] boot 1/2", "seconds": 40.0},
                      {"what": "boot arm64-split-fill [] boot 1/2", "seconds": 12.0}]}
    new = {"scenarios": [clear.key],
           "phases": [{"what": "build arm64-vanilla", "seconds": 6.0},
                      {"what": "boot arm64-vanilla [] boot 1/1", "seconds": 9.0}],
           "boot_runs": {"boot arm64-vanilla [] boot 1/1": [f"{clear.key}:vanilla"]}}
    for run, data in (("2026-11-23/qemu-1", old), ("2026-11-24/qemu-2", new)):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "results.json").write_text(json.dumps(data))
    seen = benchtime.history(lambda d: bench.described(d, [clear, enable]), tmp_path)
    assert seen == {f"{clear.key}:vanilla": [20.0, 9.0], f"{enable.key}:vanilla": [20.0],
                    f"{clear.key}:fill": [12.0]}
    built = benchtime.builds(tmp_path)
    assert built == {"arm64-vanilla": [300.0, 6.0]}
    assert benchtime.warm_build("arm64-vanilla", built) == 6.0


def test_make_bench_default_fits_in_20_minutes_warm_by_the_saved_runs():
    """README's estimate: the boots by the runs in results/, and each kernel
    built warm; 2 min are left for the selftests and headers."""
    known = scenarios.load_all()
    default = scenarios.select(known, None, "default")
    clock = benchtime.Clock(benchtime.history(lambda d: bench.described(d, known)))
    built = benchtime.builds()
    kernels = [bench.build_name(arch, (v, "", "", cfg, ""))
               for arch in {s.arch for s in default}
               for v, cfg in bench.kernels(bench.boot_plan([s for s in default if s.arch == arch]))]
    total = (clock.left([b.runs for b in bench.boots(default)])
             + sum(benchtime.warm_build(k, built) for k in kernels))
    assert total == pytest.approx(16 * 60, abs=3 * 60) and total < 18 * 60


def test_a_run_builds_its_sides_kernels_the_patched_headers_and_says_where_it_is(
        monkeypatch, capsys, tmp_path):
    """run_qemu with the builds and QEMU replaced: make bench
    SCENARIO=x86-split-on-fault/execute-hugetlb-icount builds the before and
    vanilla kernels, only the patched tree's headers, and prints each boot's
    place and the time left."""
    from lab import buildcache, initramfs, kernel, qemu, selftests
    known = scenarios.load_all()
    sc, = scenarios.select(known, ["x86-split-on-fault/execute-hugetlb-icount"])
    done = []
    # a kept kernel or a build: lab/buildcache.py's
    monkeypatch.setattr(buildcache, "build_kernel", lambda b: done.append(("kernel", b.name)))
    monkeypatch.setattr(kernel, "headers", lambda b: done.append(("headers", b.name)))
    monkeypatch.setattr(selftests, "build", lambda b: done.append(("selftests", b.name)))
    monkeypatch.setattr(initramfs, "pack", lambda *a, **k: tmp_path / "initrd")
    monkeypatch.setattr(bench.paths, "LOGS", tmp_path)

    def boot(argv, budget, log, marker):
        key = sc.key
        faults = 32768 if "before" in str(argv) else 64
        return qemu.Console(lines=[f"{bench.BEGIN} {key}\n",
                                   "Executing from memory         : 0.182089871s\n",
                                   f"Executing from memory stats: pf_taken=+{faults}\n",
                                   "Populating memory             : 0.287886544s\n",
                                   f"{bench.END} {key} rc=0\n"], outcome=qemu.ENDED, seconds=9.0)
    monkeypatch.setattr(qemu, "run", boot)
    res = bench.run_qemu([sc], known)
    assert done == [("kernel", "x86_64-before-split-on-fault"), ("kernel", "x86_64-vanilla"),
                    ("headers", "x86_64-patched"), ("selftests", "x86_64-patched")]
    err = capsys.readouterr().err
    assert "bench: 1 scenarios in 6 boots, about " in err
    assert "bench boot 1 of 6, scenario 1 of 1; about " in err
    assert "bench boot 6 of 6, scenario 1 of 1; about 9 s of boots left" in err
    assert res.boot_runs["boot x86_64-vanilla [hugepagesz=2M hugepages=300 kvm.nx_huge_pages=Y "
                         "kvm.tdp_mmu=Y] icount clock boot 3/3"] == [f"{sc.key}:6.12 TDP MMU"]
    assert res.values[sc.key][("execute faults", "")]["6.12 TDP MMU"] == [64.0] * 3


def test_a_kernel_recorded_only_cold_is_as_fast_warm_as_the_others():
    built = {"lock-stat": [654.0, 453.0], "vanilla": [6.0, 479.0], "before": [14.0, 1032.0]}
    assert benchtime.warm_build("lock-stat", built) == 14.0
    assert benchtime.warm_build("vanilla", built) == 6.0
    assert benchtime.warm_build("never-built", built) == 14.0
