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
    rep = testrun.judge_boot(tl, "tdp", second, "log", earlier=ktap.parse(FIRST))
    got = {label.split(": ", 1)[1]: r.status for label, r in rep.rows}
    assert got == {"dirty_log_test": ktap.PASS, "hardware_disable_test": ktap.SKIP,
                   "dirty_log_perf_test": ktap.PASS, "demand_paging_test": ktap.FAIL}
    assert rep.problems == []
