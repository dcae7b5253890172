import json
import math
import re

import pytest

from lab import bench, benchreport, profile, scenarios, stats
from lab.progress import LabError

SCENARIOS = r'''
topic = "t"
[[scenario]]
level = "full"
name = "enable"
arch = "arm64"
command = "dirty_log_perf_test -g -k 2M -b 64M"
group_by = "Testing guest mode: (.*)"
seed = "-35 % (seed)"
repeats = 2
metrics = [
  { name = "enable dirty logging", regex = 'Enabling dirty logging time: (\d+\.\d+)s' },
  { name = "clear dirty log", regex = 'Iteration \d+ clear dirty log time: (\d+\.\d+)s' },
]
[[scenario]]
level = "full"
name = "other"
arch = "x86_64"
command = "execute_perf_test"
metrics = [ { name = "execute", regex = 'Execute time: (\d+)ms', unit = "ms" } ]
'''

# dirty_log_perf_test's own lines (6.12), for two guest modes.
OUTPUT = """\
Testing guest mode: PA-bits:40,  VA-bits:48,  4K pages
Populate memory time: 2.104578964s
Enabling dirty logging time: 0.012500000s

Iteration 1 clear dirty log time: 0.001000000s
Iteration 2 clear dirty log time: 0.003000000s
Testing guest mode: PA-bits:48,  VA-bits:48, 64K pages
Enabling dirty logging time: 0.020000000s
Iteration 1 clear dirty log time: 0.002000000s
""".splitlines()


def scs():
    return scenarios.parse(SCENARIOS, "bench/t.toml")


def test_metrics_are_read_per_guest_mode_and_unit():
    enable, other = scs()
    got = scenarios.read_metrics(enable, OUTPUT)
    assert got[("enable dirty logging", "PA-bits:40,  VA-bits:48,  4K pages")] == [0.0125]
    assert got[("clear dirty log", "PA-bits:40,  VA-bits:48,  4K pages")] == [0.001, 0.003]
    assert got[("enable dirty logging", "PA-bits:48,  VA-bits:48, 64K pages")] == [0.02]
    assert scenarios.read_metrics(other, ["Execute time: 250ms"]) == {("execute", ""): [0.25]}


LEVELS = r'''
topic = "t"
[defaults]
arch = "x86_64"
command = "execute_perf_test -S"
[[scenario]]
name = "counted"
level = "quick"
metrics = [ { name = "faults", phase = "Executing from memory", stat = "pf_taken" } ]
[[scenario]]
name = "emulated"
clock = "icount"
metrics = [ { name = "execute", regex = 'Executing from memory\s*: (\d+\.\d+)s' } ]
[[scenario]]
name = "timed"
level = "full"
metrics = [ { name = "execute", regex = 'Executing from memory\s*: (\d+\.\d+)s' } ]
'''


def test_levels_and_selection():
    levels = scenarios.parse(LEVELS, "bench/t.toml")
    assert [s.name for s in scenarios.select(levels, None, "quick")] == ["counted"]
    assert [s.name for s in scenarios.select(levels, None, "default")] == ["counted", "emulated"]
    assert len(scenarios.select(levels, None, "full")) == 3
    with pytest.raises(LabError, match="unknown scenario.*nope.*known: t/counted, t/emulated"):
        scenarios.select(levels, ["nope"])


def test_a_time_on_the_hosts_clock_runs_in_full_only():
    timed_by_default = LEVELS.replace('name = "timed"\nlevel = "full"\n', 'name = "timed"\n')
    with pytest.raises(LabError, match=r"^bench/t.toml: timed: level 'default' runs counts and "
                       r"emulated time that repeat only, and 'execute' is a time of clock "
                       r"'host', which do not: "
                       r'give it level = "full", or clock = "icount"$'):
        scenarios.parse(timed_by_default, "bench/t.toml")


def test_make_bench_default_runs_each_topics_counts_and_no_host_time():
    every = scenarios.load_all()
    default = scenarios.select(every, None, "default")
    assert {s.topic for s in default} == {s.topic for s in every}
    assert {s.kind(m.name) for s in default for m in s.metrics} == {
        scenarios.COUNT, scenarios.EMULATED_TIME}
    # exact figures need no five boots a side
    assert {s.repeats for s in default} <= {1, 3}


@pytest.mark.parametrize("bad, msg", [
    ('[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\ncommand="c"\nmetrics=[{name="m", regex="no group"}]\n',
     "captures no value"),
    ('[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\ncommand="c"\n'
     'metrics=[{name="m", regex="(\\\\d+)", unit="hours"}]\n',
     r"^bench/bad.toml: \[\[scenario\]\] 'x', metrics 'm': 'unit' is 'hours', not one of 's', "
     r"'ms', 'us', 'ns', 'count'$"),
    ('[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\nmetrics=[]\n',
     r"^bench/bad.toml: \[\[scenario\]\] 'x': missing key 'command'$"),
    ('[defaults]\nrepeat=3\n[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\ncommand="c"\nmetrics=[]\n',
     r"^bench/bad.toml: \[defaults\]: unknown key 'repeat' \(did you mean 'repeats'\?\)$"),
    ('[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\ncommand="c"\nmetrics=[]\nrepeat=3\n',
     r"^bench/bad.toml: \[\[scenario\]\] 'x': unknown key 'repeat' \(did you mean 'repeats'\?\)$"),
    ('[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\ncommand="c"\nmetrics=[]\nrepeats="3"\n',
     r"'repeats' must be an integer, not a string \('3'\)$"),
    ('[[scenario]]\nlevel = "full"\nname="x"\narch="arm64"\ncommand="c"\nmetrics=[{name="m", regx="(\\\\d+)"}]\n',
     r"'x', metrics 'm': unknown key 'regx' \(did you mean 'regex'\?\)$"),
])
def test_bad_scenarios_are_refused(bad, msg):
    with pytest.raises(LabError, match=msg):
        scenarios.parse(bad, "bench/bad.toml")


def console(rc="0", body=OUTPUT):
    return ["LAB-SCENARIO-BEGIN t/enable\r\n", *[x + "\n" for x in body],
            f"LAB-SCENARIO-END t/enable rc={rc}\n"]


def test_runs_are_averaged_compared_and_reported():
    enable, other = scs()
    res = bench.Results()
    for v, scale in (("vanilla", 1.0), ("patched", 0.5)):
        for jitter in (1.0, 1.02):
            out, rc = bench.split_console(console())["t/enable"]
            lines = [ln.replace("0.012500000", f"{0.0125 * scale * jitter:.9f}") for ln in out]
            bench.record_run(res, enable, v, lines, rc, "boot")
    cell = res.values["t/enable"][("clear dirty log", "PA-bits:40,  VA-bits:48,  4K pages")]
    assert cell["vanilla"] == [0.002, 0.002]          # the mean of iterations 1 and 2
    text = benchreport.render([enable, other], res)
    assert "| t/enable | enable dirty logging | PA-bits:40,  VA-bits:48,  4K pages |" in text
    assert "-50.0 % | faster |  |" in text
    # the seed is the scenario's: on its first row alone
    assert text.count("-35 % (seed)") == 1
    assert "| t/enable | clear dirty log | PA-bits:40,  VA-bits:48,  4K pages |" in text.split(
        "-35 % (seed)")[0].splitlines()[-1]
    # the same clear times in every boot of each side: exact, the difference as it is
    assert " | 0.0020 ± 0.0000 (2) | 0.0020 ± 0.0000 (2) | 0 | exact |" in text
    assert "| t/other | - | - | - | - | - | no data |" in text


def test_crash_and_missing_metric_are_errors_of_their_cell(tmp_path):
    enable, other = scs()
    res = bench.Results()
    out, rc = bench.split_console(console()[:3])["t/enable"]   # the guest died mid-run
    bench.record_run(res, enable, "patched", out, rc, "boot 1")
    bench.record_run(res, enable, "vanilla", ["nothing useful"], 0, "boot 2")
    bench.record_run(res, other, "vanilla", None, None, "boot 3")
    errs = res.errors
    assert errs["t/enable"][0].startswith("patched: never finished (boot 1)")
    assert "vanilla: no line for metric 'enable dirty logging'" in errs["t/enable"][1]
    assert errs["t/other"] == ["vanilla: did not run (boot 3)"]
    text = bench.write([enable, other], res, tmp_path)
    assert "Errors (cells above lack these runs):" in text
    saved = json.loads((tmp_path / "results.json").read_text())
    again = bench.Results.from_json(saved)
    assert again.errors == res.errors


def test_guest_script_marks_each_scenario():
    enable = scs()[0]
    script = bench.guest_script([(enable, enable.sides[1])])
    assert "echo LAB-SCENARIO-BEGIN t/enable\n" in script
    assert "/usr/bin/timeout 300 ./dirty_log_perf_test -g -k 2M -b 64M 2>&1\n" in script
    assert "rc=$?\necho LAB-SCENARIO-END t/enable rc=$rc\n" in script


SIDES = r'''
topic = "x"
[defaults]
arch = "x86_64"
cmdline = "hugepagesz=2M hugepages=64"
metrics = [ { name = "disable", regex = 'Disabling dirty logging time: (\d+\.\d+)s' } ]
[[scenario]]
level = "full"
name = "disable"
command = "dirty_log_perf_test -s anonymous_hugetlb"
sides = [ { label = "shadow MMU", cmdline = "kvm.tdp_mmu=N" }, { label = "TDP MMU" } ]
[[scenario]]
level = "full"
name = "also-tdp"
command = "dirty_log_perf_test"
sides = [ { label = "eps=N", cmdline = "kvm.eager_page_split=N" }, { label = "TDP MMU" } ]
[[scenario]]
level = "full"
name = "kernels"
command = "dirty_log_perf_test"
'''


def test_sides_default_to_the_kernels_or_name_two_command_lines():
    disable, also, kernels = scenarios.parse(SIDES, "bench/x.toml")
    cmd = "dirty_log_perf_test -s anonymous_hugetlb"
    assert disable.sides == (
        scenarios.Side("shadow MMU", "patched", "hugepagesz=2M hugepages=64 kvm.tdp_mmu=N", cmd),
        scenarios.Side("TDP MMU", "patched", "hugepagesz=2M hugepages=64", cmd))
    assert kernels.labels == ("vanilla", "patched")
    # sides that boot alike share a boot; the baseline of each scenario boots first
    plan = bench.boot_plan([disable, also, kernels])
    assert [(k, [(s.name, side.label) for s, side in v]) for k, v in plan.items()] == [
        (("patched", "hugepagesz=2M hugepages=64 kvm.tdp_mmu=N", "host", (), ""),
         [("disable", "shadow MMU")]),
        (("patched", "hugepagesz=2M hugepages=64", "host", (), ""),
         [("disable", "TDP MMU"), ("also-tdp", "TDP MMU"), ("kernels", "patched")]),
        (("patched", "hugepagesz=2M hugepages=64 kvm.eager_page_split=N", "host", (), ""),
         [("also-tdp", "eps=N")]),
        (("vanilla", "hugepagesz=2M hugepages=64", "host", (), ""), [("kernels", "vanilla")]),
    ]


@pytest.mark.parametrize("side, msg", [
    ('sides = [ { cmdline = "x" }, { label = "B" } ]',
     r"^bench/bad.toml: \[\[scenario\]\] 's', sides #1: missing key 'label'$"),
    ('sides = [ { label = "A", kernel = "mine" }, { label = "B" } ]',
     r"sides 'A': 'kernel' is 'mine', not one of 'vanilla', 'patched'$"),
    ('sides = [ { label = "A" } ]', "one side compares with nothing"),
    ('sides = [ { label = "A" }, { label = "A", cmdline = "y" } ]',
     "two sides are labelled 'A'"),
    ('sides = [ { label = "A" }, { label = "B", command = "c" } ]',
     "'A' and 'B' boot the same kernel with the same command line and run the same command"),
    ('sides = [ { label = "metric" }, { label = "B", cmdline = "y" } ]',
     "'metric' names a key of results.json"),
    ('sides = [ { label = "A", cmd = "x" }, { label = "B" } ]',
     r"sides 'A': unknown key 'cmd' \(did you mean 'command'\?\)$"),
    ('a = { label = "A" }\nb = { label = "B" }', "unknown key 'a'"),
])
def test_bad_sides_are_refused(side, msg):
    text = f'[[scenario]]\nlevel = "full"\nname="s"\narch="x86_64"\ncommand="c"\nmetrics=[]\n{side}\n'
    with pytest.raises(LabError, match=msg):
        scenarios.parse(text, "bench/bad.toml")


def test_report_has_a_table_per_pair_of_sides():
    disable, also, kernels = scenarios.parse(SIDES, "bench/x.toml")
    res = bench.Results()
    # shadow 4.0 and 4.2 s, TDP 3.0 and 3.1 s: mean 4.1 vs 3.05, by hand -25.6 %
    for label, xs in (("shadow MMU", (4.0, 4.2)), ("TDP MMU", (3.0, 3.1))):
        for x in xs:
            bench.record_run(res, disable, label, [f"Disabling dirty logging time: {x:.9f}s"],
                             0, "boot")
    text = benchreport.render([disable, also, kernels], res)
    assert "| scenario | metric | case | shadow MMU mean ± sd (n) | TDP MMU mean ± sd (n) |" in text
    assert "| x/disable | disable |  | 4.1000 ± 0.1414 (2) | 3.0500 ± 0.0707 (2) | -25.6 % |" in text
    assert "| scenario | metric | case | vanilla mean ± sd (n) | patched mean ± sd (n) |" in text
    assert "| x/kernels | - | - | - | - | - | no data |" in text


# One line of each format the scenarios of bench/ read, as the guest's
# console printed them (carriage returns included), with its value.
REAL_LINES = {
    "Enabling dirty logging time: 0.014101376s\r\n": 0.014101376,
    "Iteration 2 clear dirty log time: 0.005670896s\r\n": 0.005670896,
    "Iteration 1 dirty memory time: 0.400892656s\r\n": 0.400892656,
    "Iteration 2 dirty memory time: 1.735685244s\r\n": 1.735685244,
    "Disabling dirty logging time: 0.000606592s\r\n": 0.000606592,
    "Populating memory             : 0.081057655s\r\n": 0.081057655,
    "Executing from memory         : 0.842189463s\r\n": 0.842189463,
    "Enabling dirty logging instructions: 15790\r\n": 15790,
    "Iteration 1 clear dirty log instructions: 5297825\r\n": 5297825,
    # selftests-dirty-log/0006, from the guest's console (-icount, arm64)
    "Populate memory time: 0.423118112s\r\n": 0.423118112,
    "Populate memory instructions: 202218379\r\n": 202218379,
    # access_tracking_perf_test -p of patches/x86-lockless-aging, as its
    # authors specify it (not yet seen on a console), and /proc/lock_stat's
    # line of a lock taken only for write, from the guest's console (the
    # lock-stat kernel, legacy MMU): a line may carry several metrics' values.
    "Aging pass duration (avg): 0.123456789s, passes: 12, total: 1.481481468s\r\n":
        (0.123456789, 12),
    "vCPU wall time (slowest): 3.456789012s\r\n": 3.456789012,
    # arm64-aging/0004, from the guest's console (-icount, arm64)
    "Aging pass instructions (avg): 7312574\r\n": 7312574,
    # selftests-mmu-bench (-S), from the guest's console (x86_64): a stats
    # line names only what changed, so a stat it leaves out reads 0
    "Populate memory stats: mmu_cache_miss=+263 pages_4k=+131089 max_mmu_rmap_size=127(peak)"
    " pf_taken=+131089 pf_fixed=+131089 tlb_flush=+1 exits=+131532 io_exits=+1 irq_exits=+442"
    " host_state_reload=+458 fpu_reload=+3 req_event=+1 preemption_reported=+60"
    " preemption_other=+393\r\n": (131089, 127, 0),
    "Iteration 1 dirty memory stats: remote_tlb_flush_requests=+20 mmu_shadow_zapped=+273"
    " mmu_recycled=+273 mmu_cache_miss=+291 pages_4k=+9216 pf_taken=+131110 pf_fixed=+131110"
    " tlb_flush=+20 exits=+131446 io_exits=+1 irq_exits=+335 host_state_reload=+234"
    " fpu_reload=+3 preemption_reported=+38 preemption_other=+191\r\n": (131110, 0, 9216, 20),
    "Disabling dirty logging stats:\r\n": 0,
    "Executing from memory stats: pages_4k=+32768 pages_2m=-64 nx_lpage_splits=+64 pf_taken=+64"
    " pf_fixed=+64 exits=+123 io_exits=+1 irq_exits=+58 host_state_reload=+12 fpu_reload=+3"
    " preemption_reported=+7\r\n": (64, 32768),
    "                        &(kvm)->mmu_lock:             2              4        3771.00"
    "        7850.80       25673.12        6418.28             33           4146"
    "           0.65        6138.67       77036.39          18.58\r\n": (4, 4146, 25673.12),
    # selftests-mmu-bench/0004 (x86_64)
    "Destroying VM time: 0.012345678s\r\n": 0.012345678,
}


def test_every_metric_of_bench_reads_a_real_line():
    console = [f"{bench.BEGIN} k\n", *REAL_LINES, f"{bench.END} k rc=0\n"]
    lines, rc = bench.split_console(console)["k"]
    assert rc == 0
    known = {v for vs in REAL_LINES.values() for v in (vs if isinstance(vs, tuple) else (vs,))}
    for sc in scenarios.load_all():
        got = scenarios.read_metrics(sc, lines)
        for m in sc.metrics:
            # group_by lines are absent here, so every value is in group ""
            values = got.get((m.name, ""), [])
            assert len(values) == 1, (sc.key, m.name, values)
            # a metric per another is read, then divided by the other's value
            value = values[0] * (got[(m.per, "")][0] if m.per else 1)
            assert any(math.isclose(value / scenarios.UNITS[m.unit], k) for k in known), (
                sc.key, m.name, values)


CLOCKED = r'''
topic = "c"
[defaults]
arch = "arm64"
command = "dirty_log_perf_test -g -k 2M"
metrics = [ { name = "enable", regex = 'Enabling dirty logging time: (\d+\.\d+)s' } ]
[[scenario]]
level = "full"
name = "wall"
[[scenario]]
level = "full"
name = "counted"
clock = "icount"
'''


def test_an_icount_scenario_boots_apart_with_qemus_icount(tmp_path):
    wall, counted = scenarios.parse(CLOCKED, "bench/c.toml")
    assert (wall.clock, counted.clock) == ("host", "icount")
    # same kernels and command line, but a clock of its own: a boot of its own
    assert list(bench.boot_plan([wall, counted])) == [
        ("vanilla", "", "host", (), ""), ("patched", "", "host", (), ""),
        ("vanilla", "", "icount", (), ""), ("patched", "", "icount", (), "")]
    clk = scenarios.CLOCKS[counted.clock]
    argv = profile.load("arm64").qemu_argv(tmp_path / "Image", tmp_path / "initrd", "",
                                           clk.qemu_args, clk.smp)
    assert argv[argv.index("-icount") + 1] == "shift=0,sleep=off"
    assert argv[argv.index("-smp") + 1] == "1"
    assert "-icount" not in profile.load("arm64").qemu_argv(tmp_path / "Image",
                                                            tmp_path / "initrd", "")
    res = bench.Results()
    for sc in (wall, counted):
        for side, x in (("vanilla", 0.02), ("patched", 0.01)):
            bench.record_run(res, sc, side, [f"Enabling dirty logging time: {x:.9f}s"], 0, "b")
    text = benchreport.render([wall, counted], res)
    assert "| c/wall | enable |" in text and "| c/counted (icount) | enable |" in text
    assert "(icount): QEMU ran with -icount shift=0 and one vCPU" in text


def test_an_unknown_clock_is_refused():
    with pytest.raises(LabError, match="'clock' is 'tsc', not one of 'host', 'icount'"):
        scenarios.parse(CLOCKED.replace('"icount"', '"tsc"'), "bench/c.toml")


COUNTED = r'''
topic = "x86-lockless-aging"
[[scenario]]
level = "full"
name = "locks"
arch = "x86_64"
command = "access_tracking_perf_test -p -v 2"
config = "lock-stat"
before = "echo 0 > /proc/lock_stat"
after = "grep 'mmu_lock' /proc/lock_stat"
metrics = [ { name = "mmu_lock write contentions", unit = "count", regex = '&\(kvm\)->mmu_lock(?:-W)?:\s+\d+\s+(\d+)' } ]
[[scenario]]
level = "full"
name = "timed"
arch = "x86_64"
command = "access_tracking_perf_test -p -v 2"
metrics = [ { name = "avg pass", regex = 'Aging pass duration \(avg\): (\d+\.\d+)s' } ]
'''


def test_a_scenario_with_config_boots_kernels_of_its_own(tmp_path):
    (tmp_path / "lock-stat.config").write_text("CONFIG_LOCK_STAT=y\n")
    locks, timed = scenarios.parse(COUNTED, "bench/x.toml", configs=tmp_path)
    assert locks.config == ("lock-stat",) and timed.config == ()
    plan = bench.boot_plan([locks, timed])
    assert list(plan) == [("vanilla", "", "host", ("lock-stat",), ""),
                          ("patched", "", "host", ("lock-stat",), ""),
                          ("vanilla", "", "host", (), ""), ("patched", "", "host", (), "")]
    # only what a side boots: the selftests need the patched tree's headers, not its kernel
    assert bench.kernels(bench.boot_plan([locks])) == [
        ("vanilla", ("lock-stat",)), ("patched", ("lock-stat",))]
    script = bench.guest_script([(locks, locks.sides[0])])
    assert ("echo LAB-SCENARIO-BEGIN x86-lockless-aging/locks\necho 0 > /proc/lock_stat\n"
            "/usr/bin/timeout 300 ./access_tracking_perf_test -p -v 2 2>&1\nrc=$?\n"
            "grep 'mmu_lock' /proc/lock_stat\n"
            "echo LAB-SCENARIO-END x86-lockless-aging/locks rc=$rc\n") in script


def test_lock_stat_lines_are_read():
    # /proc/lock_stat of 6.12: the class, then -W and -R lines when both are taken
    out = ["&(kvm)->mmu_lock-W:  12  345  0.10  9.50  1234.00  3.58  100  67890  0.05  "
           "80.00  99999.00  1.47",
           "&(kvm)->mmu_lock-R:  0  0  0.00  0.00  0.00  0.00  1  20  0.10  0.20  3.00  0.15"]
    locks = scenarios.parse(COUNTED, "bench/x.toml", configs=_cfg())[0]
    assert scenarios.read_metrics(locks, out) == {("mmu_lock write contentions", ""): [345.0]}


def _cfg():
    import tempfile
    from pathlib import Path
    d = Path(tempfile.mkdtemp())
    (d / "lock-stat.config").write_text("")
    return d


@pytest.mark.parametrize("extra, msg", [
    ('config = "nope"', "config 'nope' names no fragment"),
    ('befor = "x"', r"unknown key 'befor' \(did you mean 'before'\?\)"),
])
def test_bad_scenario_keys_are_refused(extra, msg):
    text = ('[[scenario]]\nlevel = "full"\nname="x"\narch="x86_64"\ncommand="c"\n'
            'metrics=[{name="m", regex="(\\\\d+)"}]\n' + extra + "\n")
    with pytest.raises(LabError, match=msg):
        scenarios.parse(text, "bench/bad.toml", configs=_cfg())


def test_the_aging_scenarios_read_the_lines_the_selftest_prints():
    # access_tracking_perf_test -p (patches/x86-lockless-aging) and 6.12's /proc/lock_stat
    out = ["Aging pass duration (avg): 0.123456789s, passes: 12, total: 1.481481468s",
           "vCPU wall time (slowest): 3.456789012s",
           "                       &(kvm)->mmu_lock:          7          89           0.10"
           "           9.50        1234.00           3.58            100          67890"
           "           0.05          80.00       99999.00           1.47"]
    got = {s.name: scenarios.read_metrics(s, out) for s in scenarios.load_all()
           if s.topic == "x86-lockless-aging"}
    assert got["populate-legacy"] == {("aging pass (avg)", ""): [0.123456789],
                                      ("aging passes", ""): [12.0],
                                      ("vCPU wall time (slowest)", ""): [3.456789012]}
    assert got["populate-tdp-lock-stat"] == {("aging passes", ""): [12.0],
                                             ("mmu_lock write acquisitions", ""): [67890.0],
                                             ("mmu_lock write contentions", ""): [89.0]}


CPU = '''
[defaults]
arch = "arm64"
command = "access_tracking_perf_test -p"
metrics = [ { name = "pass", regex = 'pass: (\\d+\\.\\d+)s' } ]

[[scenario]]
level = "full"
name = "hw-af"

[[scenario]]
level = "full"
name = "sw-af"
cpu = "max,midr=0xc00fac30"
'''


def test_a_scenario_with_a_cpu_boots_apart_with_that_cpu(tmp_path):
    hw, sw = scenarios.parse(CPU, "bench/a.toml")
    assert (hw.cpu, sw.cpu) == ("", "max,midr=0xc00fac30")
    assert list(bench.boot_plan([hw, sw])) == [
        ("vanilla", "", "host", (), ""), ("patched", "", "host", (), ""),
        ("vanilla", "", "host", (), "max,midr=0xc00fac30"),
        ("patched", "", "host", (), "max,midr=0xc00fac30")]
    prof = profile.load("arm64")
    argv = prof.qemu_argv(tmp_path / "Image", tmp_path / "initrd", "", cpu=sw.cpu)
    assert argv[argv.index("-cpu") + 1] == "max,midr=0xc00fac30"
    argv = prof.qemu_argv(tmp_path / "Image", tmp_path / "initrd", "")
    assert argv[argv.index("-cpu") + 1] == prof.cpu


STEPS = r'''
topic = "arm64-split-skip-level"
[[scenario]]
level = "full"
name = "clear"
arch = "arm64"
command = "dirty_log_perf_test -k 2M -b 64M"
repeats = 2
metrics = [ { name = "clear", regex = 'clear dirty log time: (\d+\.\d+)s' } ]
sides = [ { label = "vanilla", kernel = "vanilla" },
          { label = "fill", kernel = "split-fill" },
          { label = "patched" },
          { label = "floor", command = "dirty_log_perf_test -b 64M" } ]
[[scenario]]
level = "full"
name = "enable"
arch = "arm64"
command = "dirty_log_perf_test -g -k 2M -b 64M"
repeats = 1
metrics = [ { name = "enable", regex = 'Enabling dirty logging time: (\d+\.\d+)s' } ]
'''


def steps():
    return scenarios.parse(STEPS, "bench/s.toml", kernels=("vanilla", "patched", "split-fill"))


def test_sides_boot_each_kernel_once_per_repeat_the_baseline_first():
    clear, enable = steps()
    assert clear.labels == ("vanilla", "fill", "patched", "floor")
    floor = clear.sides[3]
    assert (floor.variant, floor.command) == ("patched", "dirty_log_perf_test -b 64M")
    plan = bench.boot_plan([clear, enable])
    # the floor runs in the patched kernel's boot: a side's command needs no boot of its own
    assert [(k[0], [side.label for _, side in v]) for k, v in plan.items()] == [
        ("vanilla", ["vanilla", "vanilla"]), ("split-fill", ["fill"]),
        ("patched", ["patched", "floor", "patched"])]
    assert bench.kernels(plan) == [("vanilla", ()), ("split-fill", ()), ("patched", ())]
    # enable wants one repeat: the second round boots its kernels for clear alone
    assert [(r, k[0], [(s.name, side.label) for s, side in todo])
            for r, _, k, todo in bench.schedule(plan)] == [
        (0, "vanilla", [("clear", "vanilla"), ("enable", "vanilla")]),
        (0, "split-fill", [("clear", "fill")]),
        (0, "patched", [("clear", "patched"), ("clear", "floor"), ("enable", "patched")]),
        (1, "vanilla", [("clear", "vanilla")]),
        (1, "split-fill", [("clear", "fill")]),
        (1, "patched", [("clear", "patched"), ("clear", "floor")])]


def test_a_side_with_its_own_command_runs_it_in_a_section_of_its_own():
    clear, _ = steps()
    patched, floor = clear.sides[2], clear.sides[3]
    script = bench.guest_script([(clear, patched), (clear, floor)])
    assert ("echo LAB-SCENARIO-BEGIN arm64-split-skip-level/clear\n"
            "/usr/bin/timeout 300 ./dirty_log_perf_test -k 2M -b 64M 2>&1\n") in script
    assert ("echo LAB-SCENARIO-BEGIN arm64-split-skip-level/clear@3\n"
            "/usr/bin/timeout 300 ./dirty_log_perf_test -b 64M 2>&1\nrc=$?\n"
            "echo LAB-SCENARIO-END arm64-split-skip-level/clear@3 rc=$rc\n") in script
    console = ["LAB-SCENARIO-BEGIN arm64-split-skip-level/clear\n",
               "Iteration 1 clear dirty log time: 0.020000000s\n",
               "LAB-SCENARIO-END arm64-split-skip-level/clear rc=0\n",
               "LAB-SCENARIO-BEGIN arm64-split-skip-level/clear@3\n",
               "Iteration 1 clear dirty log time: 0.005000000s\n",
               "LAB-SCENARIO-END arm64-split-skip-level/clear@3 rc=0\n"]
    sections = bench.split_console(console)
    res = bench.Results()
    for side in (patched, floor):
        out, rc = sections[bench.section(clear, side)]
        bench.record_run(res, clear, side.label, out, rc, "boot")
    assert res.values[clear.key][("clear", "")] == {"patched": [0.02], "floor": [0.005]}


def three_sides():
    """clear's values: vanilla 10 and 11 ms, fill 8 and 8.2, patched 5 and
    5.1, the floor never ran."""
    clear, enable = steps()
    res = bench.Results()
    for label, xs in (("vanilla", (0.010, 0.011)), ("fill", (0.008, 0.0082)),
                      ("patched", (0.005, 0.0051))):
        for x in xs:
            bench.record_run(res, clear, label, [f"Iteration 1 clear dirty log time: {x:.9f}s"],
                             0, "boot")
    return clear, enable, res


def test_the_report_has_each_side_against_the_baseline(tmp_path):
    clear, enable, res = three_sides()
    text = bench.write([clear, enable], res, tmp_path)
    assert ("| scenario | metric | case | vanilla mean ± sd (n) | fill mean ± sd (n) | change | "
            "vs noise | patched mean ± sd (n) | change | vs noise | floor mean ± sd (n) | change "
            "| vs noise | seed |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            ) in text
    # by hand: 10.5 ms; 8.1 ms -22.9 %; 5.05 ms -51.9 %
    assert ("| arm64-split-skip-level/clear | clear |  | 0.0105 ± 0.0007 (2) | "
            "0.0081 ± 0.0001 (2) | -22.9 % | faster | 0.0051 ± 0.0001 (2) | -51.9 % | faster | "
            "n=0 | - | missing data |  |") in text
    # a two-side scenario keeps a table of its own, as before
    assert ("| scenario | metric | case | vanilla mean ± sd (n) | patched mean ± sd (n) | "
            "change | vs noise | seed |\n|---|---|---|---|---|---|---|---|\n"
            "| arm64-split-skip-level/enable | - | - | - | - | - | no data |  |") in text
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["sides"] == {"arm64-split-skip-level/clear": ["vanilla", "fill", "patched",
                                                               "floor"],
                              "arm64-split-skip-level/enable": ["vanilla", "patched"]}
    from lab import resultsindex
    assert resultsindex.run_rows(saved) == [
        "| arm64-split-skip-level/clear | clear | vanilla → fill | 1 | -22.9 % | 1 faster | 0 |",
        "| arm64-split-skip-level/clear | clear | vanilla → patched | 1 | -51.9 % | 1 faster "
        "| 0 |",
        "| arm64-split-skip-level/clear | clear | vanilla → floor | 1 | missing data | - | 0 |",
        "| arm64-split-skip-level/enable | - | - | 0 | no data | - | 0 |"]


def test_each_side_has_its_bar_against_the_baseline():
    from lab import benchplot
    clear, enable, res = three_sides()
    got = [(b.label, round(b.change, 1), b.sides) for b in benchplot.bars([clear, enable], res)]
    assert got == [
        ("arm64-split-skip-level/clear: clear (fill vs vanilla)", -22.9, ("vanilla", "fill")),
        ("arm64-split-skip-level/clear: clear (patched vs vanilla)", -51.9,
         ("vanilla", "patched"))]


STATS = r'''
topic = "s"
[defaults]
arch = "x86_64"
command = "dirty_log_perf_test -S"
[[scenario]]
level = "full"
name = "faults"
metrics = [ { name = "populate faults", phase = "Populate memory", stat = "pf_taken" },
            { name = "populate fast faults", phase = "Populate memory", stat = "pf_fast" },
            { name = "rmap", phase = "Populate memory", stat = "max_mmu_rmap_size" },
            { name = "2M mappings", phase = "Populate memory", stat = "pages_2m" } ]
'''


def test_a_stat_metric_reads_its_phase_line_and_an_absent_stat_is_zero():
    sc, = scenarios.parse(STATS, "bench/s.toml")
    assert all(m.unit == "count" for m in sc.metrics)
    lines = ["Populate memory time: 0.1s",
             # another phase's line names pf_taken too: not this metric's
             "Enabling dirty logging stats: pf_taken=+7",
             "Populate memory stats: pages_4k=+4096 pages_2m=-3 max_mmu_rmap_size=127(peak) "
             "pf_taken=+4100 pf_taken_x=+1"]
    got = scenarios.read_metrics(sc, lines)
    assert got[("populate faults", "")] == [4100]
    assert got[("populate fast faults", "")] == [0]       # unchanged: not printed
    assert got[("rmap", "")] == [127]
    assert got[("2M mappings", "")] == [-3]


@pytest.mark.parametrize("metric, error", [
    ('{ name = "m", phase = "Populate memory" }', "give a regex, or a phase and a stat"),
    ('{ name = "m", stat = "pf_taken" }', "give a regex, or a phase and a stat"),
    ('{ name = "m", regex = "x (\\\\d+)", phase = "P", stat = "pf_taken" }',
     "give a regex, or a phase and a stat"),
    ('{ name = "m", phase = "P", stat = "pf taken" }', "is no stat name"),
])
def test_a_stat_metric_needs_its_phase_and_a_stat_name(metric, error):
    text = STATS[:STATS.index("metrics = [")] + f"metrics = [ {metric} ]\n"
    with pytest.raises(LabError, match=error):
        scenarios.parse(text, "bench/s.toml")


def test_a_run_builds_only_the_kernels_its_sides_boot():
    """make bench SCENARIO=x86-split-on-fault/execute-hugetlb-icount built the
    patched kernel too, 285 s of a fresh clone's 8 min 54 s, for its headers."""
    sc, = scenarios.select(scenarios.load_all(), ["x86-split-on-fault/execute-hugetlb-icount"])
    assert bench.kernels(bench.boot_plan([sc])) == [("before-split-on-fault", ()), ("vanilla", ())]
    assert bench.TESTS_OF not in bench.kernels(bench.boot_plan([sc]))


EXACT = r'''
topic = "x"
[[scenario]]
name = "execute"
arch = "x86_64"
clock = "icount"
exact_counts = true
command = "execute_perf_test -S"
seed = "execute 2.90 s (zap, before) -> 0.112 s (split) (-96 %)"
sides = [ { label = "before", kernel = "vanilla", cmdline = "kvm.a=1" },
          { label = "6.12", kernel = "vanilla" } ]
metrics = [ { name = "execute", regex = 'Executing from memory\s*: (\d+\.\d+)s' },
            { name = "faults", phase = "Executing from memory", stat = "pf_taken" },
            { name = "fast faults", phase = "Executing from memory", stat = "pf_fast" } ]
'''


def test_exact_values_read_as_exact_and_a_zero_baseline_as_a_difference():
    """qemu-100135's cells: counts declared exact with one boot a side, a
    time the same in both boots of each side, fast faults 0 -> 1570."""
    sc, = scenarios.parse(EXACT, "bench/x.toml")
    res = bench.Results()
    for label, t, faults, fast in (("before", 0.182137, 32768, 0), ("6.12", 0.006124, 64, 1570)):
        for _ in range(2 if label == "before" else 1):
            bench.record_run(res, sc, label, [
                f"Executing from memory : {t:.9f}s",
                f"Executing from memory stats: pf_taken=+{faults}"
                + (f" pf_fast=+{fast}" if fast else "")], 0, "boot")
    bench.record_run(res, sc, "6.12", ["Executing from memory : 0.006124000s",
                                      "Executing from memory stats: pf_taken=+64 pf_fast=+1570"],
                     0, "boot")
    text = benchreport.render([sc], res)
    rows = {r.split(" | ")[1]: r for r in text.splitlines() if r.startswith("| x/execute")}
    assert rows["faults"].endswith("| 32768 ± 0 (2) | 64 ± 0 (2) | -32704 (-99.8 %) | exact |  |")
    assert "| 0 ± 0 (2) | 1570 ± 0 (2) | +1570 (from 0) | exact |" in rows["fast faults"]
    assert "| -0.176013 s (-96.6 %) | exact |" in rows["execute"]
    assert "nan %" not in text and not any("noise" in r for r in rows.values())
    assert text.count("(-96 %)") == 1
    assert "Counts (KVM statistics" in text and "emulated time" in text


def test_one_boot_a_side_has_no_noise_estimate():
    sc, = scenarios.parse(EXACT.replace("exact_counts = true\n", ""), "bench/x.toml")
    res = bench.Results()
    for label, faults in (("before", 32768), ("6.12", 64)):
        bench.record_run(res, sc, label, [f"Executing from memory stats: pf_taken=+{faults}"],
                         0, "boot")
    text = benchreport.render([sc], res)
    assert "| 32768 ± 0 (1) | 64 ± 0 (1) | -99.8 % | no noise estimate (1 run) |" in text


def test_a_change_beyond_noise_never_reads_zero_percent():
    # qemu-100135, rmap iteration 2: 54 us more of 0.2871 s, the boots a few ns apart
    c = stats.compare([0.287091407, 0.287091407, 0.287091409],
                      [0.287145154, 0.287145155, 0.287145161])
    assert benchreport.change_cell(c, scenarios.EMULATED_TIME) == "+0.019 %"
    assert c.verdict == "slower"
    assert benchreport.fmt_pct(0.0) == "+0.0 %" and benchreport.fmt_pct(-96.66) == "-96.7 %"


def test_a_saved_run_is_reported_again_from_its_results_json(tmp_path):
    sc, = scenarios.parse(EXACT, "bench/x.toml")
    res = bench.Results()
    for label, faults in (("before", 32768), ("6.12", 64)):
        bench.record_run(res, sc, label, [f"Executing from memory stats: pf_taken=+{faults}"],
                         0, "boot")
    run = tmp_path / "qemu-100135"
    bench.write([sc], res, run)
    (run / "report.md").write_text("| old | +nan % | within noise |\n")
    text = bench.rewrite(run, [sc])
    assert (run / "report.md").read_text() == text == benchreport.render([sc], res)
    assert "-32704 (-99.8 %) | exact |" in text


SWEEP = r'''
topic = "z"
[[scenario]]
name = "disable-{sweep}"
arch = "x86_64"
clock = "icount"
exact_counts = true
repeats = 1
sweep = ["64M", "2M", "1G"]
sweep_fit_per = "2M"
sweep_fit_at = "96G"
command = "dirty_log_perf_test -b {sweep}"
seed = "-98 % at 96 GiB"
sides = [ { label = "before", kernel = "vanilla", cmdline = "x=1" },
          { label = "6.12", kernel = "vanilla" } ]
metrics = [ { name = "flushes", unit = "count", regex = 'flushes: (\d+)' } ]
'''


def test_a_sweep_is_a_scenario_per_point_with_the_point_in_its_name_and_command():
    got = scenarios.parse(SWEEP, "bench/z.toml")
    assert [(s.name, s.command, s.sweep.x) for s in got] == [
        ("disable-64M", "dirty_log_perf_test -b 64M", 64 << 20),
        ("disable-2M", "dirty_log_perf_test -b 2M", 2 << 20),
        ("disable-1G", "dirty_log_perf_test -b 1G", 1 << 30)]
    assert {s.sweep_key for s in got} == {"z/disable-{sweep}"}
    # the family by name selects every point, a point by its name itself
    assert scenarios.select(got, ["disable-{sweep}"]) == got
    assert scenarios.select(got, ["z/disable-1G"]) == [got[2]]


@pytest.mark.parametrize("change, msg", [
    (('name = "disable-{sweep}"', 'name = "disable"'), "in place of {sweep}: in the name and"),
    (('-b {sweep}', '-b 1G'), "in place of {sweep}: in the name and in the command"),
    (('"2M", "1G"]', '"2M", "lots"]'), "sweep value 'lots' is no number or size"),
    (('"2M", "1G"]', '"2M", "2M"]'), "sweep values repeat"),
    (('sweep_fit_per = "2M"\n', ''), "sweep_fit_at extends a fit: give sweep_fit_per too"),
    (('sweep = ["64M", "2M", "1G"]\n', ''), "names {sweep} or a fit, but gives no sweep"),
    (('sweep_fit_per = "2M"', 'sweep_fit_per = "0"'), "sweep value '0' is no number or size "
     "above 0"),
    (('repeats = 1', 'repeats = 1\ncmdline = "hugepages={sweep}"'),
     "{sweep} stands in the name and commands only, not in cmdline"),
    (('kernel = "vanilla", cmdline = "x=1"', 'kernel = "vanilla", cmdline = "x={sweep}"'),
     "{sweep} stands in the name and commands only, not in sides' cmdline"),
])
def test_bad_sweeps_are_refused(change, msg):
    with pytest.raises(LabError, match=re.escape(msg)):
        scenarios.parse(SWEEP.replace(*change), "bench/z.toml")


def test_a_sweeps_report_has_a_row_per_point_and_each_sides_line():
    """before: 1000 fixed + 512 per 2M (a flush per 4K page); 6.12: 50
    fixed + 1 per 2M; extended to 96G (49152 huge pages)."""
    scs = scenarios.parse(SWEEP, "bench/z.toml")
    res = bench.Results()
    for sc in scs:
        n = sc.sweep.x / (2 << 20)
        for label, fixed, per in (("before", 1000, 512), ("6.12", 50, 1)):
            bench.record_run(res, sc, label, [f"flushes: {fixed + per * n:.0f}"], 0, "boot")
    text = benchreport.render(scs, res)
    lines = text.splitlines()
    assert "Sweep z/disable-{sweep} (icount): -98 % at 96 GiB" in lines
    rows = [r for r in lines if r.startswith(("| 2M ", "| 64M ", "| 1G "))]
    # in the order of the points' sizes, not of the file
    assert [r.split(" | ")[0] for r in rows] == ["| 2M", "| 64M", "| 1G"]
    assert rows[0] == "| 2M | 1512 ± 0 (1) | 51 ± 0 (1) | -1461 (-96.6 %), exact |"
    # each point's own cost per 2M, smallest first: the fixed part shows
    assert "| before | 1000 | 512 | 1.0000 | 0.0 % | 1512 / 543.2 / 514 | 25166824 |  |" in lines
    assert "| 6.12 | 50 | 1 | 1.0000 | 0.0 % | 51 / 2.562 / 1.098 | 49202 | -99.8 % |" in lines
    # a side on the baseline's line is no change there
    assert ("| fit of flushes | fixed | per 2M | r² | largest miss | per 2M at each point | "
            "at 96G (extrapolated) | change there |") in lines
    # the points are not repeated in the table of single scenarios
    assert not any(r.startswith("| z/disable-") for r in lines)


def test_a_line_fits_points_and_needs_two_xs():
    line = stats.fit_line([1, 2, 3], [12, 14, 16])
    assert (line.fixed, line.slope, line.r2) == (10, 2, 1)
    assert line.at(10) == 30
    assert stats.fit_line([1, 1], [2, 3]) is None
    assert 0 < stats.fit_line([1, 2, 3], [1, 3, 2]).r2 < 1


PER = r'''
topic = "a"
[[scenario]]
name = "aging"
level = "full"
arch = "x86_64"
command = "access_tracking_perf_test -p"
metrics = [ { name = "acquisitions per pass", unit = "count", per = "passes", regex = 'acq: (\d+)' },
            { name = "passes", unit = "count", regex = 'passes: (\d+)' } ]
'''


def test_a_metric_per_another_is_divided_by_it_in_each_run():
    sc, = scenarios.parse(PER, "bench/a.toml")
    assert scenarios.read_metrics(sc, ["acq: 4146", "passes: 6"]) == {
        ("acquisitions per pass", ""): [691.0], ("passes", ""): [6.0]}
    res = bench.Results()
    bench.record_run(res, sc, "vanilla", ["acq: 4146", "passes: 0"], 0, "boot 1")
    assert res.errors["a/aging"] == [
        "vanilla: no line for metric 'acquisitions per pass' (/acq: (\\d+)/), or its 'passes' "
        "was 0 in boot 1"]


@pytest.mark.parametrize("per, msg", [
    ("pases", "is per 'pases', which is no metric of its own; one of: 'passes'"),
    ("acquisitions per pass", "is per 'acquisitions per pass', which is no metric"),
])
def test_a_metric_per_an_unknown_or_derived_metric_is_refused(per, msg):
    with pytest.raises(LabError, match=re.escape(msg)):
        scenarios.parse(PER.replace('per = "passes"', f'per = "{per}"'), "bench/a.toml")


def test_two_vcpus_under_icount_count_emulated_time_that_runs_in_full_only():
    two = EXACT.replace('clock = "icount"', 'clock = "icount-2cpu"')
    # two vCPUs taking turns: emulated times that differ boot to boot
    with pytest.raises(LabError, match="'execute' is a time of clock 'icount-2cpu', which do not"):
        scenarios.parse(two.replace("exact_counts = true\n", ""), "bench/x.toml")
    with pytest.raises(LabError, match="exact_counts declares the counts of one vCPU"):
        scenarios.parse(two.replace('clock = "icount-2cpu"',
                                    'clock = "icount-2cpu"\nlevel = "full"'), "bench/x.toml")
    sc, = scenarios.parse(two.replace("exact_counts = true\n", 'level = "full"\n'),
                          "bench/x.toml")
    assert sc.kind("execute") == scenarios.EMULATED_TIME
    assert scenarios.CLOCKS[sc.clock].smp == 2


def test_a_fit_says_how_far_its_points_are_off_the_line_and_keeps_signs():
    """A change has the sign of its difference, whatever the baseline's:
    a negative count (4K mappings removed) going toward 0 is +50 %; a
    curved sweep shows its largest miss."""
    scs = scenarios.parse(SWEEP.replace("flushes: (\\d+)", "flushes: (-?\\d+)"), "bench/z.toml")
    res = bench.Results()
    for sc in scs:
        n = sc.sweep.x / (2 << 20)
        for label, y in (("before", -512 * n), ("6.12", -256 * n + (100 if n == 1 else 0))):
            bench.record_run(res, sc, label, [f"flushes: {y:.0f}"], 0, "boot")
    text = benchreport.render(scs, res)
    row = next(r for r in text.splitlines() if r.startswith("| 6.12 | "))
    assert row.endswith("| +50.0 % |"), row
    miss = float(row.split(" | ")[4].removesuffix(" %"))
    assert miss == 30.0, row    # the 2M point: -156 measured, -202.8 on the line
    assert "| before | 0 | -512 | 1.0000 | 0.0 % |" in text
