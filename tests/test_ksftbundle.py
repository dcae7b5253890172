"""make kselftest-tar: a host's list ([[host]] of a test list) is checked as
the rest of the list is, and the bundle holds the kselftest install, the
harness's tests and, for a host, one collection per test (its wrapper with
the host's arguments, its settings with the timeout) that run_kselftest.sh
runs and nothing else."""
import pytest

from lab import testlist
from lab.progress import LabError

LIST = """
[[boot]]
name = "tdp"
[[test]]
name = "dirty_log_perf_test"
args = "-b 64M"
[[test]]
name = "nx_huge_pages_test.sh"
files = ["nx_huge_pages_test"]
[[test]]
name = "hardware_disable_test"
skip = "segfaults when linked static"
[[host]]
name = "big"
cpus = 96
memory = "192G"
cmdline = "hugepagesz=1G hugepages=100"
[[host.test]]
name = "dirty_log_perf_test"
label = "dirty_log_perf_test-1g"
args = "-v 96 -b 1G  -s anonymous_hugetlb_1gb"
timeout = 1800
[[host.test]]
name = "nx_huge_pages_test.sh"
args = "-e split"
timeout = 600
[[host.test]]
name = "dirty_log_perf_test"
args = "-v 64"
timeout = 900
[[host.test]]
name = "hardware_disable_test"
timeout = 60
"""


@pytest.fixture
def tl():
    return testlist.parse(LIST, "x86_64", "t.toml")


def test_a_host_s_tests_carry_its_arguments_and_timeouts(tl):
    h = tl.host("big")
    assert (h.cpus, h.memory, h.cmdline) == (96, "192G", "hugepagesz=1G hugepages=100")
    assert [(t.name, t.label, t.timeout) for t in h.tests] == [
        ("dirty_log_perf_test", "dirty_log_perf_test-1g", 1800),
        ("nx_huge_pages_test.sh", "nx_huge_pages_test.sh", 600),
        ("dirty_log_perf_test", "dirty_log_perf_test", 900),
        ("hardware_disable_test", "hardware_disable_test", 60)]
    # a test TCG cannot run (skip) is the host's all the same
    assert "    hardware_disable_test  [60 s]" in testlist.describe(tl)
    assert "dirty_log_perf_test -v 96 -b 1G  -s anonymous_hugetlb_1gb (dirty_log_perf_test-1g)  " \
           "[1800 s]" in testlist.describe(tl)


def _with_host_test(entry: str) -> str:
    return LIST + "[[host.test]]\n" + entry


@pytest.mark.parametrize("bad, msg", [
    (_with_host_test('name = "dirty_log_perf_tset"\ntimeout = 9\n'),
     r"^t.toml: \[\[host\]\] 'big', test 'dirty_log_perf_tset': not a \[\[test\]\] of this "
     r"list \(did you mean 'dirty_log_perf_test'\?\)$"),
    (_with_host_test('name = "demand_paging_test"\nlabel = "d"\ntimeout = 9\n'),
     r"test 'demand_paging_test': not a \[\[test\]\] of this list$"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\nargz = "-v 2"\ntimeout = 9\n'),
     r"^t.toml: \[\[host\]\] 'big', test 'dirty_log_perf_test': unknown key 'argz' "
     r"\(did you mean 'args'\?\)$"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\n'),
     r"^t.toml: \[\[host\]\] 'big', test 'dirty_log_perf_test': missing key 'timeout'$"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\ntimeout = "60"\n'),
     r"'timeout' must be an integer, not a string"),
    (_with_host_test('name = "dirty_log_perf_test"\ntimeout = 9\n'),
     r"test 'dirty_log_perf_test': the label 'dirty_log_perf_test' is taken"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "../x"\ntimeout = 9\n'),
     r"label '../x': letters"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\ntimeout = 0\n'),
     r"timeout 0: not a number of seconds"),
    (LIST.replace('memory = "192G"', 'memory = "192 GiB"'), r"\[\[host\]\] 'big': memory"),
    (LIST.replace('cpus = 96', 'cpu = 96'),
     r"^t.toml: \[\[host\]\] 'big': unknown key 'cpu' \(did you mean 'cpus'\?\)$"),
    (LIST + '[[host]]\nname = "big"\ncpus = 1\nmemory = "1G"\n[[host.test]]\n'
     'name = "dirty_log_perf_test"\ntimeout = 1\n', "host names repeat"),
    (LIST + '[[host]]\nname = "small"\ncpus = 1\nmemory = "1G"\ntest = []\n',
     r"\[\[host\]\] 'small': no test"),
    (LIST.replace('[[host]]\nname = "big"', '[[hosts]]\nname = "big"'),
     r"unknown key 'hosts' \(did you mean 'host'\?\)"),
], ids=["typo", "no-such-test", "unknown-key", "no-timeout", "timeout-string", "label-twice",
        "label-path", "timeout-0", "memory", "host-unknown-key", "host-twice", "no-tests",
        "hosts-table"])
def test_bad_hosts_are_refused(bad, msg):
    with pytest.raises(LabError, match=msg):
        testlist.parse(bad, "x86_64", "t.toml")


def test_an_unknown_host_is_named_with_the_list_s_hosts(tl):
    with pytest.raises(LabError, match=r"^t.toml has no \[\[host\]\] 'bgi'; its hosts: big$"):
        tl.host("bgi")
