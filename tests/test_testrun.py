import pytest

from lab import ktap, qemu, testlist, testrun

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
    return qemu.Console(lines=list(lines), outcome=outcome, returncode=rc)


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
ASSERTION = run("dirty_log_perf_test fail exit=254", "#   dirty_log_perf_test.c:74: r == 0")
PASSED = run("dirty_log_perf_test pass")


@pytest.mark.parametrize("runs, status, detail", [
    ([PASSED], ktap.PASS, ""),
    ([SHUTDOWN], ktap.FAIL, "exit=254"),
    # a known flake, then a pass: flaky, and the failure is kept
    ([SHUTDOWN, PASSED], ktap.FLAKY, "exit=254, then passed when run again"),
    # an unknown failure stands even if the second run passes
    ([ASSERTION, PASSED], ktap.FAIL, "exit=254; run again: pass"),
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
