"""make lava-run: lava-run's JSON lines become make test's rows, the device
dictionary renders as lava-server renders it, and what goes wrong says so
in one line. No network, no lava-dispatcher: a fake template dir, fake
.debs, a fake lava-run."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab import ktap, lava, lavadevice, lavarun, testlist
from lab.progress import LabError

LIST = """
[[boot]]
name = "legacy"
why = "legacy MMU"
cmdline = "kvm.tdp_mmu=N"

[[test]]
name = "dirty_log_perf_test"
[[test]]
name = "memslot_modification_stress_test"
[[test]]
name = "nx_huge_pages_test.sh"
[[test]]
name = "mmu_rmaps_stat_test"
[[test]]
name = "eager_split_test"
skip = "needs a stage-2 dump"
"""
DEF = "kvm-selftests-legacy"


def tl():
    return testlist.parse(LIST, "x86_64", "t.toml")


def rec(lvl, msg):
    return json.dumps({"dt": "2026-11-24T23:38:12.765291", "lvl": lvl, "msg": msg})


def result(case_id, res, definition=DEF):
    import re
    return rec("results", {"case": re.sub(r"\W+", "_", case_id.lower()),
                           "definition": definition, "extra": {"test_case_id": case_id},
                           "level": "3.1", "result": res})


def lava_line(case, res, **kw):
    return rec("results", {"case": case, "definition": "lava", "result": res, **kw})


def log_lines(results, console=(), job="pass", validated=True, monitor="passed", **job_kw):
    lines = [rec("info", "lava-dispatcher, installed at version: 2023.01")]
    if validated:
        lines.append(lava_line("validate", "pass"))
    # LAVA writes a few lines that are not JSON (YAML's tags in a download's size).
    lines.append('{"dt": "x", "lvl": "results", "msg": {"case": "file-download", '
                 '"extra": {"size": ! "4289536"}, "definition": "lava", "result": "pass"}}')
    lines += [rec("target", c) for c in console]
    lines += results
    if monitor:
        lines.append(lava_line("lava-test-monitor", "pass", extra={"status": monitor}))
    if job:
        lines.append(lava_line("job", job, **job_kw))
    return lines


def judge(lines, rc=0):
    out = lavarun.read_log(lines, DEF)
    return lavarun.judge(out, tl(), "legacy", Path("lava.log"), rc)


def statuses(rep):
    return {label.split(": ", 1)[1]: r.status for label, r in rep.rows}


ALL_PASS = [result(n, "pass") for n in ("dirty_log_perf_test",
                                         "memslot_modification_stress_test",
                                         "nx_huge_pages_test.sh", "mmu_rmaps_stat_test")]


def test_results_lines_become_the_boots_rows_as_make_test_writes_them():
    rep = judge(log_lines(ALL_PASS))
    assert [label for label, _ in rep.rows] == [
        f"x86_64/legacy: {t.name}" for t in tl().tests_for("legacy")]
    assert statuses(rep) == {"dirty_log_perf_test": ktap.PASS,
                             "memslot_modification_stress_test": ktap.PASS,
                             "nx_huge_pages_test.sh": ktap.PASS,   # test_case_id, not case
                             "mmu_rmaps_stat_test": ktap.PASS,
                             "eager_split_test": ktap.SKIP}        # the list's skip
    assert rep.label == "x86_64/legacy" and not rep.problems


def test_only_the_jobs_monitor_and_lavas_own_results_are_read():
    lines = log_lines([*ALL_PASS, result("dirty_log_perf_test", "fail", "other-def")])
    out = lavarun.read_log(lines, DEF)
    assert [n for n, _ in out.results] == ["dirty_log_perf_test",
                                           "memslot_modification_stress_test",
                                           "nx_huge_pages_test.sh", "mmu_rmaps_stat_test"]
    assert out.validated and out.job["result"] == "pass" and out.monitor == "passed"


def test_a_test_lava_did_not_report_is_not_run():
    rep = judge(log_lines(ALL_PASS[:2]))
    st = statuses(rep)
    assert st["nx_huge_pages_test.sh"] == st["mmu_rmaps_stat_test"] == ktap.NOT_RUN
    row = dict(rep.rows)["x86_64/legacy: mmu_rmaps_stat_test"]
    assert row.detail == lavarun.NOT_REPORTED and row.failed
    assert f"not run: {lavarun.NOT_REPORTED}" in ktap.render(rep.rows)


def test_a_cut_name_is_not_the_test():
    """What the open-ended pattern made of dirty_log_perf_test: no row."""
    rep = judge(log_lines([result("dirty_log_", "pass"), *ALL_PASS[1:]]))
    assert statuses(rep)["dirty_log_perf_test"] == ktap.NOT_RUN


def test_the_console_gives_what_lava_does_not_keep():
    """LAVA records a SKIP as a pass and keeps no assertion: the console
    lines of the same log give them, where they agree with LAVA."""
    console = ["# selftests: kvm: dirty_log_perf_test",
               "ok 1 selftests: kvm: dirty_log_perf_test # SKIP no hugepages",
               "# selftests: kvm: memslot_modification_stress_test",
               "# ==== Test Assertion Failure ====",
               "#   lib/kvm_util.c:42: ret == 0",
               "#   KVM_SET_USER_MEMORY_REGION failed",
               "not ok 1 selftests: kvm: memslot_modification_stress_test # exit=254"]
    results = [result("dirty_log_perf_test", "pass"),
               result("memslot_modification_stress_test", "fail"), *ALL_PASS[2:]]
    rep = judge(log_lines(results, console))
    rows = {label.split(": ", 1)[1]: r for label, r in rep.rows}
    assert rows["dirty_log_perf_test"] == ktap.Result("dirty_log_perf_test", ktap.SKIP,
                                                      "no hugepages")
    m = rows["memslot_modification_stress_test"]
    assert m.status == ktap.FAIL and "KVM_SET_USER_MEMORY_REGION failed" in m.detail
    assert any("memslot_modification_stress_test" in p for p in rep.problems)


def test_lavas_verdict_stands_when_the_console_disagrees():
    console = ["ok 1 selftests: kvm: dirty_log_perf_test"]
    rep = judge(log_lines([result("dirty_log_perf_test", "fail"), *ALL_PASS[1:]], console))
    assert statuses(rep)["dirty_log_perf_test"] == ktap.FAIL


def test_a_job_lava_run_could_not_validate_is_one_line():
    lines = log_lines([], validated=False, job="fail", monitor="",
                      error_type="Job", error_msg="Invalid job data: ['extra keys']")
    with pytest.raises(LabError, match=r"could not validate the job: Job: Invalid job "
                       r"data: \['extra keys'\]; log: lava.log$"):
        judge(lines, rc=1)


def test_no_job_result_at_all():
    with pytest.raises(LabError, match=r"lava-run ended \(exit 1\) without its job's result"):
        judge([rec("info", "Traceback ...")], rc=1)


def test_a_failed_job_is_a_problem_and_its_rows_stay():
    lines = log_lines(ALL_PASS[:1], job="fail", monitor="",
                      error_type="Test", error_msg="lava-test-monitor timed out after 600 seconds")
    rep = judge(lines, rc=1)
    assert rep.problems == ["x86_64/legacy: the LAVA job failed: Test: lava-test-monitor "
                            "timed out after 600 seconds (log: lava.log)"]
    assert statuses(rep)["dirty_log_perf_test"] == ktap.PASS
    assert statuses(rep)["mmu_rmaps_stat_test"] == ktap.NOT_RUN


def test_a_monitor_that_did_not_see_the_end_is_a_problem():
    rep = judge(log_lines(ALL_PASS, monitor="failed"))
    assert len(rep.problems) == 1 and "monitor ended failed" in rep.problems[0]


def test_the_report_is_a_summary_passsets_reads(tmp_path, monkeypatch):
    from lab import passsets, paths, report
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    rep = judge(log_lines(ALL_PASS[:3]))
    assert report.show([rep], "lava") == 1           # one test not run
    (d,) = tmp_path.glob("lava-*")
    run = passsets.load(d)
    assert run.boots["x86_64/legacy"]["mmu_rmaps_stat_test"].status == ktap.NOT_RUN
    assert run.boots["x86_64/legacy"]["dirty_log_perf_test"].status == ktap.PASS


def test_definition_is_the_monitors_name_as_lava_writes_it():
    assert lavarun.definition_of({"actions": [{"test": {"monitors": [
        {"name": "kvm-selftests-legacy"}]}}]}) == "kvm-selftests-legacy"


def test_timeout_is_the_jobs_own_and_the_margin():
    assert lavarun.job_timeout({"timeouts": {"job": {"minutes": 58}}}, 120) == 58 * 60 + 120
    assert lavarun.job_timeout({"timeouts": {"job": {"hours": 1, "seconds": 5}}}, 0) == 3605


def test_the_real_jobs_timeout_and_files():
    from lab import profile
    tl_ = testlist.load("x86_64")
    job = lava.qemu_job(lava.load(), profile.load("x86_64"), tl_, tl_.boots[0])
    files = lavarun.job_files(job)
    assert [f.name for f in files][1].startswith("initramfs-x86_64-patched-debug")
    assert lavarun.job_timeout(job, 0) == job["timeouts"]["job"]["minutes"] * 60
    assert lavarun.definition_of(job) == f"kvm-selftests-{tl_.boots[0].name}"


# -- the device dictionary -----------------------------------------------

def fake_types(tmp_path):
    types = tmp_path / "device-types"
    types.mkdir()
    (types / "base.jinja2").write_text(
        "device_type: {{ device_type|default('x') }}\n{% block body %}{% endblock %}\n")
    (types / "qemu.jinja2").write_text(
        "{% extends 'base.jinja2' %}\n{% set device_type = 'qemu' %}\n"
        "{% block body %}\narch: {{ arch }}\nmemory: {{ memory|default(512) }}\n"
        "netdevice: {{ netdevice }}\n"
        "{% for o in extra_options|default([]) %}\n- {{ o }}\n{% endfor %}\n{% endblock %}\n")
    return types


def test_device_renders_over_the_types_with_the_jobs_context(tmp_path):
    pytest.importorskip("jinja2", reason="jinja2 is not installed: make venv installs it "
                        "(requirements.txt)")
    types = fake_types(tmp_path)
    ctx = {"arch": "amd64", "memory": 4096, "extra_options": ["-accel tcg", "-smp 2"]}
    text = lavadevice.render("qemu-01.jinja2", [lava.DATA / "devices", types], ctx)
    assert "arch: amd64" in text and "memory: 4096" in text
    assert "netdevice: user" in text                   # lab/lava/devices/qemu-01.jinja2's
    assert "- -accel tcg\n- -smp 2" in text            # trim_blocks, as lava-server renders


def test_device_rendered_in_the_venv_and_its_error_in_one_line(tmp_path):
    pytest.importorskip("jinja2", reason="jinja2 is not installed: make venv installs it "
                        "(requirements.txt)")
    types = fake_types(tmp_path)
    py = Path(sys.executable)
    text = lavarun.render_device(py, "qemu-01.jinja2", [lava.DATA / "devices", types],
                                 {"arch": "arm64"})
    assert "device_type: qemu" in text and "arch: arm64" in text
    (types / "qemu.jinja2").unlink()
    with pytest.raises(LabError, match=r"cannot render the device dictionary qemu-01.jinja2 "
                       r"from .*: TemplateNotFound: 'qemu.jinja2' not found"):
        lavarun.render_device(py, "qemu-01.jinja2", [lava.DATA / "devices", types], {})


def test_template_dirs_ours_first():
    d = lavarun.load()
    dirs = lavarun.template_dirs(d, Path("/x"))
    assert dirs[0] == lava.DATA / "devices" and dirs[-1] == Path("/x") / d.device_types
    assert (lava.DATA / "devices" / f"{d.device}.jinja2").exists()


# -- the packages --------------------------------------------------------

def test_data_file_names_every_package_with_a_version():
    d = lavarun.load()
    assert {"lava-dispatcher", "lava-common", "lava-server"} <= set(d.packages)
    assert all(v for v in d.packages.values())


def test_a_package_without_a_version_is_refused(tmp_path):
    f = tmp_path / "dispatcher.toml"
    f.write_text(lavarun.DATA.read_text().replace('lava-common = "2023.01-2"',
                                                  'lava-common = 2023'))
    with pytest.raises(LabError, match="lava-common must be a version string"):
        lavarun.load(f)


def make_deb(tmp_path, name, files):
    if not shutil.which("dpkg-deb"):
        pytest.skip("dpkg-deb not found (apt: dpkg)")
    root = tmp_path / f"pkg-{name}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n"
        f"Description: t\n")
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    deb = tmp_path / f"{name}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)],
                   check=True, capture_output=True)
    return deb


def fake_dispatcher(**kw):
    d = lavarun.load()
    return lavarun.Dispatcher(**{**d.__dict__, **kw})


def test_packages_are_unpacked_once_into_the_cache(tmp_path):
    d = fake_dispatcher(packages={"lava-dispatcher": "1", "lava-server": "1"})
    debs = {"lava-dispatcher": make_deb(tmp_path, "lava-dispatcher",
                                        [d.lava_run, f"{d.python}/lava_dispatcher/x.py"]),
            "lava-server": make_deb(tmp_path, "lava-server", [f"{d.device_types}/qemu.jinja2"])}
    asked = []

    def fetch(spec, into):
        asked.append(spec)
        return debs[spec.split("=")[0]]
    cache = tmp_path / "cache"
    root = lavarun.unpack(d, cache, fetch)
    assert asked == ["lava-dispatcher=1", "lava-server=1"]
    assert (root / d.lava_run).exists() and (root / d.device_types / "qemu.jinja2").exists()
    assert lavarun.unpack(d, cache, fetch) == root and len(asked) == 2    # cached


def test_a_package_apt_cannot_find_names_the_data_file(tmp_path):
    d = fake_dispatcher(packages={"lava-dispatcher": "9.9"})

    def fetch(spec, into):
        raise LabError(f"apt-get download {spec} from bookworm failed: E: Version '9.9' "
                       f"for 'lava-dispatcher' was not found")
    with pytest.raises(LabError, match=r"was not found \(lab/lava/dispatcher.toml names "
                       r"lava-dispatcher 9.9 of bookworm\)"):
        lavarun.unpack(d, tmp_path, fetch)
    assert not lavarun.unpacked_dir(d, tmp_path).exists()


def test_packages_without_lava_run_are_not_the_ones_expected(tmp_path):
    d = fake_dispatcher(packages={"lava-dispatcher": "1"})
    deb = make_deb(tmp_path, "lava-dispatcher", ["usr/share/doc/x"])
    with pytest.raises(LabError, match=f"have no {d.lava_run}"):
        lavarun.unpack(d, tmp_path / "c", lambda spec, into: deb)


def test_a_damaged_deb_says_dpkg_debs_words(tmp_path):
    d = fake_dispatcher(packages={"lava-dispatcher": "1"})
    bad = tmp_path / "bad.deb"
    bad.write_bytes(b"!<arch>\ntruncated")
    if not shutil.which("dpkg-deb"):
        pytest.skip("dpkg-deb not found (apt: dpkg)")
    with pytest.raises(LabError, match=r"dpkg-deb -x .*bad.deb failed"):
        lavarun.unpack(d, tmp_path / "c", lambda spec, into: bad)


# -- running it ----------------------------------------------------------

def test_lava_run_that_never_ends_is_killed(tmp_path):
    log = tmp_path / "log"
    assert lavarun.lava_run(["sh", "-c", "echo started; sleep 60"], log, 1, {}) is None
    assert log.read_text() == "started\n"


def test_lava_runs_exit_code_and_output(tmp_path):
    log = tmp_path / "log"
    assert lavarun.lava_run(["sh", "-c", "echo '{}'; exit 1"], log, 30, {}) == 1
    assert log.read_text() == "{}\n"


def test_not_root_is_one_line(monkeypatch):
    monkeypatch.setattr(lavarun.os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="lava-run runs as root only"):
        lavarun.run("x86_64", "legacy")


def test_an_unknown_boot_names_the_boots(monkeypatch):
    monkeypatch.setattr(lavarun.os, "geteuid", lambda: 0)
    with pytest.raises(LabError, match=r"has no boot 'nope' \(tdp, "):
        lavarun.run("x86_64", "nope", build=False)


def test_files_not_built_say_how_to_build_them(monkeypatch, tmp_path):
    monkeypatch.setattr(lavarun.os, "geteuid", lambda: 0)
    monkeypatch.setattr(lavarun, "job_files", lambda job: [tmp_path / "bzImage"])
    with pytest.raises(LabError, match=r"bzImage, not built: make lava-run builds them "
                       r"unless NO_BUILD=1"):
        lavarun.run("x86_64", "tdp", build=False)


def test_a_run_end_to_end_with_a_fake_lava_run(monkeypatch, tmp_path):
    """run(): the job written, the device rendered, lava-run called with
    them, its log read back; lava-run and the packages are fakes."""
    pytest.importorskip("jinja2", reason="jinja2 is not installed: make venv installs it "
                        "(requirements.txt)")
    from lab import paths
    d = lavarun.load()
    root = tmp_path / "root"
    fake_types(tmp_path).rename(tmp_path / "types")
    (root / d.device_types).parent.mkdir(parents=True)
    (tmp_path / "types").rename(root / d.device_types)
    lines = log_lines(ALL_PASS)
    (root / d.lava_run).parent.mkdir(parents=True)
    # The fake checks what make lava-run gives it, then prints the log.
    (root / d.lava_run).write_text(
        "import sys, pathlib\n"
        "a = sys.argv\n"
        "dev = pathlib.Path(a[a.index('--device') + 1]).read_text()\n"
        "assert 'arch: amd64' in dev, dev\n"
        "assert pathlib.Path(a[-1]).read_text().startswith('# LAVA job written by make lava')\n"
        # Its downloads, which a job that fails validation leaves.
        f"pathlib.Path({str(tmp_path / 'jobs')!r}, a[a.index('--job-id') + 1], 'x')"
        ".mkdir(parents=True)\n"
        f"print({chr(10).join(lines)!r})\n")
    (tmp_path / "jobs" / "1").mkdir(parents=True)          # another job's
    ours = fake_dispatcher(job_tmp=str(tmp_path / "jobs"))
    monkeypatch.setattr(lavarun, "load", lambda: ours)
    monkeypatch.setattr(lavarun.os, "geteuid", lambda: 0)
    monkeypatch.setattr(lavarun, "job_files", lambda job: [])
    monkeypatch.setattr(lavarun, "unpack", lambda d: root)
    monkeypatch.setattr(lavarun, "venv", lambda: Path(sys.executable))
    monkeypatch.setattr(lavarun, "definition_of", lambda job: DEF)
    monkeypatch.setattr(lavarun.testlist, "load", lambda arch: tl())
    for name in ("BASE_BUILD", "LOGS"):
        monkeypatch.setattr(paths, name, tmp_path / name)
    monkeypatch.setattr(lava, "OUT", tmp_path / "lava")
    rep = lavarun.run("x86_64", "legacy", build=False)
    assert not rep.problems, rep.problems
    assert statuses(rep)["mmu_rmaps_stat_test"] == ktap.PASS
    assert (tmp_path / "lava" / "qemu-x86_64-legacy.yaml").exists()
    assert list((tmp_path / "LOGS").glob("lava-run-x86_64-legacy-*.log"))
    assert [p.name for p in (tmp_path / "jobs").iterdir()] == ["1"]


def test_passes_of_one_boot_beside_a_run_of_every_boot(tmp_path, capsys):
    """python3 -m lab passes --boot: a LAVA run of x86_64/legacy beside a
    make test run of every boot compares that boot only."""
    from lab import cli
    local = [{"boot": b, "base": "6.12", "variant": "patched",
              "tests": [{"name": f"{b}: dirty_log_perf_test", "status": "pass"}]}
             for b in ("x86_64/tdp", "x86_64/legacy")]
    ours = [{**local[1], "tests": [{"name": "x86_64/legacy: dirty_log_perf_test",
                                    "status": "not run", "detail": lavarun.NOT_REPORTED}]}]
    for name, data in (("test-1", local), ("lava-1", ours)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(data))
    a, b = str(tmp_path / "test-1"), str(tmp_path / "lava-1")
    assert cli.main(["passes", "--boot", "x86_64/legacy", a, b]) == 0
    out = capsys.readouterr().out
    assert "x86_64/tdp" not in out
    assert "* dirty_log_perf_test  pass  | not run: LAVA reported no result for it" in out
    assert "x86_64/legacy: A 1 passed, 0 failed, 0 skipped; B 0 passed, 1 failed" in out
    assert cli.main(["passes", "--boot", "x86_64/nope", a, b]) == 1
    assert "passes --boot x86_64/nope: neither run has it" in capsys.readouterr().err
    assert lavarun.newest_with("x86_64/legacy", tmp_path) == tmp_path / "test-1"
    assert lavarun.newest_with("arm64/vhe", tmp_path) is None


def test_full_runs_the_data_files_boot_only_if_make_tests_run_had_it(tmp_path, monkeypatch,
                                                                     capsys):
    from lab import cli, paths
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    label = lavarun.load().full_boot
    (tmp_path / "test-2").mkdir()
    (tmp_path / "test-2" / "summary.json").write_text(json.dumps(
        [{"boot": "arm64/vhe", "tests": []}]))
    (tmp_path / "test-9").mkdir()                       # cut short: no summary
    assert lavarun.newest_run(tmp_path) == tmp_path / "test-2"
    assert cli.main(["lava-run", "--full"]) == 0
    assert f"{label} (lab/lava/dispatcher.toml full_boot) is not in {tmp_path / 'test-2'}" \
        in capsys.readouterr().err
    ran = []
    monkeypatch.setattr(lavarun, "run", lambda arch, boot, build: ran.append(
        (arch, boot, build)) or (_ for _ in ()).throw(LabError("stop here")))
    (tmp_path / "test-3").mkdir()
    (tmp_path / "test-3" / "summary.json").write_text(json.dumps(
        [{"boot": label, "tests": []}]))
    assert cli.main(["lava-run", "--full"]) == 1
    assert ran == [(*label.split("/"), False)]          # make test's build, not another
    assert cli.main(["lava-run"]) == 1
    assert "name a boot" in capsys.readouterr().err


def test_full_boot_must_be_arch_slash_boot(tmp_path):
    f = tmp_path / "dispatcher.toml"
    f.write_text(lavarun.DATA.read_text().replace('full_boot = "x86_64/legacy"',
                                                  'full_boot = "legacy"'))
    with pytest.raises(LabError, match="full_boot 'legacy' is not <arch>/<boot>"):
        lavarun.load(f)


def test_a_splat_in_the_console_fails_the_boot_as_in_make_test():
    console = ["# selftests: kvm: mmu_rmaps_stat_test",
               "[   12.5] WARNING: CPU: 1 PID: 80 at arch/x86/kvm/mmu/mmu.c:7000 x+0x1/0x2",
               "ok 1 selftests: kvm: mmu_rmaps_stat_test"]
    rep = judge(log_lines(ALL_PASS, console))
    assert statuses(rep)["mmu_rmaps_stat_test"] == ktap.PASS
    assert len(rep.problems) == 1
    assert rep.problems[0].startswith("x86_64/legacy: kernel splat while mmu_rmaps_stat_test "
                                      "ran: WARNING: CPU: 1 PID: 80")


def test_lavas_error_of_many_lines_is_said_in_one():
    """What lava-run said of a boot method no strategy takes (2023.01):
    a line per strategy."""
    msg = ("None of the boot strategies accepted your boot parameters, reasons given:\n"
           'Barebox: "method" was not "barebox"\nUUUBoot: "method" was not "uuu"')
    lines = log_lines([], validated=False, job="fail", monitor="", error_type="Job",
                      error_msg=msg)
    with pytest.raises(LabError) as e:
        judge(lines, rc=1)
    assert "\n" not in str(e.value)
    assert str(e.value) == ("lava-run could not validate the job: Job: None of the boot "
                            "strategies accepted your boot parameters, reasons given: (2 more "
                            "lines in the log); log: lava.log")


def test_a_full_run_by_another_user_says_so_and_does_not_fail(monkeypatch, capsys):
    import argparse

    from lab import cli
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    args = argparse.Namespace(full=True, arch="", boot="", no_build=False, against="")
    assert cli.cmd_lava_run(args) == 0
    said = capsys.readouterr()
    assert "not root" in said.out + said.err
