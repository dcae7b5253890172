from pathlib import Path

from lab import ktap

# What kselftest's runner prints (run_kselftest.sh -t, one call per test),
# interleaved with kernel messages and serial-console carriage returns.
CONSOLE = """\
TAP version 13\r
1..1\r
# timeout set to 120\r
# overriding timeout to 60\r
# selftests: kvm: dirty_log_test\r
# Test iterations: 3, interval: 10 (ms)\r
ok 1 selftests: kvm: dirty_log_test\r
[   30.1] kvm: some message\r
TAP version 13
1..1
# selftests: kvm: hardware_disable_test
ok 1 selftests: kvm: hardware_disable_test # SKIP
TAP version 13
1..1
# selftests: kvm: max_guest_memory_test
#
not ok 1 selftests: kvm: max_guest_memory_test # TIMEOUT 60 seconds
TAP version 13
1..1
# selftests: kvm: nx_huge_pages_test.sh
not ok 1 selftests: kvm: nx_huge_pages_test.sh # exit=254
"""


def test_parse_runner_output():
    r = {name: [run.result for run in runs]
         for name, runs in ktap.runs(CONSOLE.splitlines(keepends=True)).items()}
    assert r == {
        "dirty_log_test": [ktap.Result("dirty_log_test", ktap.PASS)],
        "hardware_disable_test": [ktap.Result("hardware_disable_test", ktap.SKIP)],
        "max_guest_memory_test": [ktap.Result("max_guest_memory_test", ktap.TIMEOUT,
                                              "TIMEOUT 60 seconds")],
        "nx_huge_pages_test.sh": [ktap.Result("nx_huge_pages_test.sh", ktap.FAIL, "exit=254")],
    }


# A legacy-MMU boot of make test (2026-11-23): dirty_log_perf_test's vCPU shut
# down in the second pass, the guest ran it again (LAB-RETRY) and it passed.
RETRIED = """# overriding timeout to 120
# selftests: kvm: dirty_log_perf_test
# Iteration 1 clear dirty log time: 0.011783340s
# ==== Test Assertion Failure ====
#   dirty_log_perf_test.c:110: get_ucall(vcpu, NULL) == UCALL_SYNC
#   Invalid guest sync status: exit_reason=SHUTDOWN
not ok 1 selftests: kvm: dirty_log_perf_test # exit=254
LAB-RETRY dirty_log_perf_test
[  118.416890] kselftest: Running tests in kvm
TAP version 13
1..1
# overriding timeout to 120
# selftests: kvm: dirty_log_perf_test
# Iteration 2 clear dirty log time: 0.004878712s
ok 1 selftests: kvm: dirty_log_perf_test
"""


def test_runs_keep_every_run_with_its_output():
    (first, again), = ktap.runs(RETRIED.splitlines(keepends=True)).values()
    assert first.result == ktap.Result("dirty_log_perf_test", ktap.FAIL, "exit=254")
    assert first.output[0] == "# Iteration 1 clear dirty log time: 0.011783340s"
    assert first.output[-1] == "#   Invalid guest sync status: exit_reason=SHUTDOWN"
    assert again.result.status == ktap.PASS
    assert again.output == ("# Iteration 2 clear dirty log time: 0.004878712s",)
    assert first.tail(1) == "    | #   Invalid guest sync status: exit_reason=SHUTDOWN"


def test_header_names_the_running_test():
    assert ktap.header_test("# selftests: kvm: demand_paging_test\r\n") == "demand_paging_test"
    assert ktap.header_test("# selftests: kvm demand_paging_test") is None


def test_render_is_kselftest_format():
    rows = [("x86_64/tdp: a", ktap.Result("a", ktap.PASS)),
            ("x86_64/tdp: b", ktap.Result("b", ktap.SKIP, "no VMX under TCG")),
            ("x86_64/tdp: c", ktap.Result("c", ktap.NOT_RUN, "guest ended early")),
            ("x86_64/tdp: d", ktap.Result("d", ktap.TIMEOUT, "TIMEOUT 60 seconds")),
            ("x86_64/tdp: e", ktap.Result("e", ktap.FLAKY, "exit=254, then passed"))]
    assert ktap.render(rows) == (
        "TAP version 13\n1..5\n"
        "ok 1 x86_64/tdp: a\n"
        "ok 2 x86_64/tdp: b # SKIP no VMX under TCG\n"
        "not ok 3 x86_64/tdp: c # not run: guest ended early\n"
        "not ok 4 x86_64/tdp: d # TIMEOUT 60 seconds\n"
        "ok 5 x86_64/tdp: e # flaky: exit=254, then passed\n"
        "# Totals: pass:2 fail:2 xfail:0 xpass:0 skip:1 error:0\n")


# A real TDP-MMU boot of make test (2026-11-23, ci-h): a vCPU of
# dirty_log_perf_test shut down, the test failed its assertion, and the guest
# (which has no addr2line) ran it again; the second run passed.
SHUTDOWN_RETRIED = (Path(__file__).parent / "fixtures/console/x86-tdp-vcpu-shutdown-retried.log"
                    ).read_text().splitlines(keepends=True)


def test_a_failed_assertion_is_said_on_one_line():
    first, again = ktap.runs(SHUTDOWN_RETRIED)["dirty_log_perf_test"]
    assert ktap.assertion(first.output) == ("dirty_log_perf_test.c:90: get_ucall(vcpu, NULL) == "
                                            "UCALL_SYNC: Invalid guest sync status: "
                                            "exit_reason=SHUTDOWN")
    assert first.why() == ("exit=254 (dirty_log_perf_test.c:90: get_ucall(vcpu, NULL) == "
                           "UCALL_SYNC: Invalid guest sync status: exit_reason=SHUTDOWN)")
    assert (again.result.status, again.why()) == (ktap.PASS, "")


def test_the_backtrace_of_a_native_host_is_left_out():
    native = ["# ==== Test Assertion Failure ====",
              "#   x86_64/dirty_log_page_splitting_test.c:201: stats_populated.pages_2m == "
              "stats_repopulated.pages_2m",
              "#   pid=1234 tid=1234 errno=0 - Success",
              "[  12.5] kvm: a kernel message meanwhile",
              "#      1\t0x0000000000402c1d: run_test at dirty_log_page_splitting_test.c:201",
              "#      2\t (inlined by) main at dirty_log_page_splitting_test.c:250",
              "#      3\t0x00007f0a1b2c3d4e: ?? ??:0",
              "#   0x40 != 0x3f (stats_populated.pages_2m != stats_repopulated.pages_2m)"]
    assert ktap.assertion(native) == (
        "x86_64/dirty_log_page_splitting_test.c:201: stats_populated.pages_2m == "
        "stats_repopulated.pages_2m: 0x40 != 0x3f (stats_populated.pages_2m != "
        "stats_repopulated.pages_2m)")


def test_output_without_an_assertion_adds_nothing():
    assert ktap.assertion(["# Random seed: 0x6b8b4567", "# some failure of its own"]) == ""
    run = ktap.Run(ktap.Result("t", ktap.FAIL, "exit=1"), ("# no assertion",))
    assert run.why() == "exit=1"
    long = ["# ==== Test Assertion Failure ====", "#   t.c:1: x", "#   " + "y" * 400]
    assert len(ktap.assertion(long)) == ktap.ASSERTION_MAX and ktap.assertion(long).endswith("...")
