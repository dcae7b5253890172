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
    r = ktap.parse(CONSOLE.splitlines(keepends=True))
    assert r == {
        "dirty_log_test": ktap.Result("dirty_log_test", ktap.PASS),
        "hardware_disable_test": ktap.Result("hardware_disable_test", ktap.SKIP),
        "max_guest_memory_test": ktap.Result("max_guest_memory_test", ktap.TIMEOUT,
                                             "TIMEOUT 60 seconds"),
        "nx_huge_pages_test.sh": ktap.Result("nx_huge_pages_test.sh", ktap.FAIL, "exit=254"),
    }


def test_header_names_the_running_test():
    assert ktap.header_test("# selftests: kvm: demand_paging_test\r\n") == "demand_paging_test"
    assert ktap.header_test("# selftests: kvm demand_paging_test") is None


def test_render_is_kselftest_format():
    rows = [("x86_64/tdp: a", ktap.Result("a", ktap.PASS)),
            ("x86_64/tdp: b", ktap.Result("b", ktap.SKIP, "no VMX under TCG")),
            ("x86_64/tdp: c", ktap.Result("c", ktap.NOT_RUN, "guest ended early")),
            ("x86_64/tdp: d", ktap.Result("d", ktap.TIMEOUT, "TIMEOUT 60 seconds"))]
    assert ktap.render(rows) == (
        "TAP version 13\n1..4\n"
        "ok 1 x86_64/tdp: a\n"
        "ok 2 x86_64/tdp: b # SKIP no VMX under TCG\n"
        "not ok 3 x86_64/tdp: c # not run: guest ended early\n"
        "not ok 4 x86_64/tdp: d # TIMEOUT 60 seconds\n"
        "# Totals: pass:1 fail:2 xfail:0 xpass:0 skip:1 error:0\n")
