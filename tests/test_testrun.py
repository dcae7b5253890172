from pathlib import Path

import pytest

from lab import console as reading, initramfs, ktap, qemu, testlist, testrun
from lab.progress import LabError

LIST = """
[[boot]]
name = "tdp"
[[test]]
name = "dirty_log_test"
[[test]]
name = "hardware_disable_test"
skip = "segfaults when linked static"
[[test]]
name = "dirty_log_perf_test"
[[test]]
name = "demand_paging_test"
[[flaky]]
match = "exit_reason=SHUTDOWN"
why = "a vCPU of the legacy MMU shuts down now and then under TCG"
"""

FIRST = ["LAB-BOOT tdp 6.12.117 lab.boot=tdp\r\n", "LAB-KVM present\n",
         "# selftests: kvm: dirty_log_test\n", "ok 1 selftests: kvm: dirty_log_test\n",
         "# selftests: kvm: dirty_log_perf_test\n", "# Testing guest mode: PA-bits:ANY\n"]


def console(lines, outcome=qemu.EXITED_EARLY, rc=0):
    """The console as the judges see it: read once (lab.console)."""
    return reading.read(qemu.Console(lines=list(lines), outcome=outcome, returncode=rc))


def test_a_silent_qemu_exit_resumes_at_the_running_test():
    tl = testlist.parse(LIST, "x86_64", "t")
    con = console(FIRST)
    assert testrun.unexplained_end(con)
    # dirty_log_perf_test is the 2nd runnable test (the skipped one is not counted)
    assert testrun.resume_point(tl, "tdp", con) == 2


def test_a_kernel_message_is_never_resumed():
    panic = console(FIRST + ["[   9.1] Kernel panic - not syncing: Fatal exception\n"])
    splat = console(FIRST + ["[   9.1] BUG: kernel NULL pointer dereference, address: 0\n"])
    never_booted = console(["qemu-system-x86_64: -kernel x: No such file\n"])
    finished = console(FIRST + ["LAB-DONE tdp\n"], outcome=qemu.ENDED)
    assert not any(testrun.unexplained_end(c) for c in (panic, splat, never_booted, finished))


def test_a_resumed_boot_keeps_the_first_boots_results():
    tl = testlist.parse(LIST, "x86_64", "t")
    second = console(["LAB-BOOT tdp\n", "ok 1 selftests: kvm: dirty_log_perf_test\n",
                      "not ok 1 selftests: kvm: demand_paging_test # exit=1\n", "LAB-DONE tdp\n"],
                     outcome=qemu.ENDED)
    rep = testrun.judge_boot(tl, "tdp", second, "log", earlier=ktap.runs(FIRST))
    got = {label.split(": ", 1)[1]: r.status for label, r in rep.rows}
    assert got == {"dirty_log_test": ktap.PASS, "hardware_disable_test": ktap.SKIP,
                   "dirty_log_perf_test": ktap.PASS, "demand_paging_test": ktap.FAIL}
    assert rep.problems == ["x86_64/tdp: demand_paging_test: exit=1; last lines of its "
                            "(first) run:\n    | (no output)"]


def run(result, *output):
    name, _, status_detail = result.partition(" ")
    status, _, detail = status_detail.partition(" ")
    return ktap.Run(ktap.Result(name, status, detail), output)


SHUTDOWN = run("dirty_log_perf_test fail exit=254", "# Iteration 1 dirty memory time: 0.01s",
               "#   Invalid guest sync status: exit_reason=SHUTDOWN")
ASSERTION = run("dirty_log_perf_test fail exit=254", "# ==== Test Assertion Failure ====",
                "#   dirty_log_perf_test.c:74: r == 0", "#   pid=1 tid=1 errno=4 - Interrupted")
PASSED = run("dirty_log_perf_test pass")


@pytest.mark.parametrize("runs, status, detail", [
    ([PASSED], ktap.PASS, ""),
    ([SHUTDOWN], ktap.FAIL, "exit=254"),
    # a known flake, then a pass: flaky, and the failure is kept
    ([SHUTDOWN, PASSED], ktap.FLAKY, "exit=254, then passed when run again"),
    # an unknown failure stands even if the second run passes
    ([ASSERTION, PASSED], ktap.FAIL, "exit=254 (dirty_log_perf_test.c:74: r == 0); run again: pass"),
    ([ASSERTION], ktap.FAIL, "exit=254 (dirty_log_perf_test.c:74: r == 0)"),
    ([SHUTDOWN, SHUTDOWN], ktap.FAIL, "exit=254; run again: exit=254"),
])
def test_a_failure_counts_unless_it_is_a_known_flake_that_passed_again(runs, status, detail):
    tl = testlist.parse(LIST, "x86_64", "t")
    r, note = testrun.judge_runs(tl, "x86_64/tdp: dirty_log_perf_test", runs)
    assert (r.status, r.detail) == (status, detail)
    if status == ktap.FLAKY:
        assert "a vCPU of the legacy MMU shuts down" in note and "exit_reason=SHUTDOWN" in note
    else:
        assert note == ""


# A real ending (make test, 2026-11-23): the x86 guest kernel oopsed on its
# own stack while dirty_log_perf_test ran, and panicked.
STACK_OOPS = (Path(__file__).parent / "fixtures/console/x86-l1-stack-oops.log").read_text(
    ).splitlines(keepends=True)
CRASH_ENTRY = """
[[flaky]]
kind = "crash"
match = "Thread overran stack"
why = "the guest kernel jumped to its own stack"
"""


def test_a_known_crash_resumes_at_the_test_that_was_running():
    tl = testlist.parse(LIST + CRASH_ENTRY, "x86_64", "t")
    con = console(STACK_OOPS)
    assert not testrun.unexplained_end(con)        # a kernel message: not silent
    assert testrun.known_crash(tl, con).why == "the guest kernel jumped to its own stack"
    assert testrun.resume_point(tl, "tdp", con) == 2    # dirty_log_perf_test
    # the x86 list names it
    assert testrun.known_crash(testlist.load("x86_64"), con).kind == "crash"


def test_other_crashes_are_not_resumed():
    tl = testlist.parse(LIST + CRASH_ENTRY.replace("Thread overran stack", "no such line"),
                        "x86_64", "t")
    assert testrun.known_crash(tl, console(STACK_OOPS)) is None
    tl = testlist.parse(LIST + CRASH_ENTRY, "x86_64", "t")
    # a splat in an earlier test: the boot was not sound before the crash
    earlier = STACK_OOPS[:3] + ["[    9.0] WARNING: CPU: 0 PID: 1 at mm/x.c:1 f+0x0/0x1\n"]
    assert testrun.known_crash(tl, console(earlier + STACK_OOPS[3:])) is None
    # the arm64 list names no crash
    assert testrun.known_crash(testlist.load("arm64"), console(STACK_OOPS)) is None
    # a test failure entry does not cover a crash
    assert testrun.known_crash(testlist.parse(LIST, "x86_64", "t"), console(STACK_OOPS)) is None


def test_a_crash_entry_of_unknown_kind_is_refused():
    with pytest.raises(LabError, match="'kind' is 'panic', not one of"):
        testlist.parse(LIST + CRASH_ENTRY.replace('"crash"', '"panic"'), "x86_64", "t")


SERIES_TESTS = """
[[test]]
name = "eager_split_test"
must_run = true
[[test]]
name = "nx_split_on_fault_test.sh"
files = ["nx_split_on_fault_test"]
"""


def test_vanilla_runs_the_curated_tests_it_has_and_skips_the_series_ones():
    tl = testlist.parse(LIST + SERIES_TESTS, "x86_64", "t")
    # the base's selftests: no eager_split_test; the wrapper script, not its program
    base = {"dirty_log_test", "dirty_log_perf_test", "demand_paging_test",
            "hardware_disable_test", "nx_split_on_fault_test.sh", "settings"}
    vanilla = testrun.for_variant(tl, "vanilla", base)
    assert {t.name: t.skip for t in vanilla.tests} == {
        "dirty_log_test": "", "hardware_disable_test": "segfaults when linked static",
        "dirty_log_perf_test": "", "demand_paging_test": "",
        "eager_split_test": testlist.NOT_IN_VARIANT,
        "nx_split_on_fault_test.sh": testlist.NOT_IN_VARIANT}
    # the guest does not look for them, and the report says why they did not run
    script = initramfs.boot_script(vanilla, "tdp")
    assert "eager_split_test" not in script and "nx_split" not in script
    done = console(["LAB-BOOT tdp\n"] + [f"ok 1 selftests: kvm: {n}\n" for n in
                    ("dirty_log_test", "dirty_log_perf_test", "demand_paging_test")]
                   + ["LAB-DONE tdp\n"], outcome=qemu.ENDED)
    rep = testrun.judge_boot(vanilla, "tdp", done, "log")
    assert rep.problems == []
    assert [(label.split(": ", 1)[1], r.status, r.detail) for label, r in rep.rows][-2:] == [
        ("eager_split_test", ktap.SKIP, "not in this variant"),
        ("nx_split_on_fault_test.sh", ktap.SKIP, "not in this variant")]
    # the patched build must have every test: one it lacks stays an error (initramfs.pack)
    assert testrun.for_variant(tl, "patched", base) is tl


def test_installed_names_the_files_as_the_lists_do(tmp_path):
    from lab import selftests
    (tmp_path / "kvm" / "x86_64").mkdir(parents=True)
    for f in ("kvm/settings", "kvm/dirty_log_test", "kvm/x86_64/nx_huge_pages_test.sh"):
        (tmp_path / f).write_text("")
    assert selftests.installed(tmp_path) == {"settings", "dirty_log_test",
                                             "x86_64/nx_huge_pages_test.sh"}


def test_the_judges_share_one_reading_of_the_console(monkeypatch):
    # lab.console reads the console once; no judge scans it again.
    tl = testlist.parse(LIST, "x86_64", "t")
    seen = console(STACK_OOPS)

    def again(*_):
        raise AssertionError("the console was parsed a second time")
    monkeypatch.setattr(ktap, "runs", again)
    monkeypatch.setattr(testrun.console.splat, "scan", again)
    testrun.judge_boot(tl, "tdp", seen, "log")
    testrun.unexplained_end(seen)
    testrun.known_crash(tl, seen)
    testrun.resume_point(tl, "tdp", seen)
