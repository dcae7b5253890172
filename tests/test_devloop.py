"""make run's selection: which tests, with which arguments, in which boot."""
import pytest

from lab import cli, devloop, kernel, profile, testlist
from lab.progress import LabError

LIST = """
[defaults]
timeout = 60
[[boot]]
name = "tdp"
cmdline = "hugepagesz=2M hugepages=64"
[[boot]]
name = "legacy"
cmdline = "kvm.tdp_mmu=N"
[[boot]]
name = "kasan-tdp"
config = "kasan"
full = true
[[test]]
name = "dirty_log_test"
args = "-i 3"
[[test]]
name = "memslot_perf_test"
args = "-s 32"
timeout = 180
boots = ["tdp"]
[[test]]
name = "nx_huge_pages_test.sh"
files = ["nx_huge_pages_test"]
[[test]]
name = "hardware_disable_test"
skip = "segfaults when linked static"
"""


@pytest.fixture
def tl(tmp_path):
    (tmp_path / "kasan.config").write_text("CONFIG_KASAN=y\n")
    return testlist.parse(LIST, "x86_64", "t", configs=tmp_path)


def test_named_tests_run_in_the_order_given_with_the_lists_arguments(tl):
    sub = tl.for_run("legacy", ["nx_huge_pages_test.sh", "dirty_log_test"])
    assert [b.name for b in sub.boots] == ["legacy"]
    assert [(t.name, t.args, t.timeout) for t in sub.tests] == [
        ("nx_huge_pages_test.sh", "", 60), ("dirty_log_test", "-i 3", 60)]
    assert sub.tests[0].files == ("nx_huge_pages_test",)
    assert [t.name for t in sub.tests_for("legacy")] == ["nx_huge_pages_test.sh", "dirty_log_test"]


def test_args_replace_the_lists_even_when_empty(tl):
    assert tl.for_run("tdp", ["dirty_log_test"], "-i 1").tests[0].args == "-i 1"
    assert tl.for_run("tdp", ["dirty_log_test"], "").tests[0].args == ""


def test_a_test_of_another_boot_keeps_its_entry(tl):
    t = tl.for_run("legacy", ["memslot_perf_test"]).tests[0]
    assert (t.args, t.timeout, t.boots) == ("-s 32", 180, ("legacy",))


def test_a_test_not_in_the_list_runs_with_the_default_timeout(tl):
    t = tl.for_run("tdp", ["aging_stress_test"], "-d 10").tests[0]
    assert (t.name, t.args, t.timeout, t.skip) == ("aging_stress_test", "-d 10", 60, "")


def test_a_skipped_test_named_runs(tl):
    assert tl.for_run("tdp", ["hardware_disable_test"]).tests[0].skip == ""


def test_names_split_on_commas_and_spaces():
    assert devloop.split_names("a,b c,,") == ["a", "b", "c"]


@pytest.mark.parametrize("boot, names, msg", [
    ("nope", ["dirty_log_test"], "has no boot nope; its boots: tdp, legacy, kasan-tdp"),
    ("tdp", [], "name at least one test"),
    ("tdp", ["a", "a"], "named twice"),
    ("tdp", ["../../bin/sh"], "not a file of the kvm collection"),
    ("tdp", ["/bin/sh"], "not a file of the kvm collection"),
    ("tdp", ["x;reboot"], "not a file of the kvm collection"),
])
def test_bad_selections_are_one_line_errors(tl, boot, names, msg):
    with pytest.raises(LabError, match=msg):
        tl.for_run(boot, names)


def test_kernel_args_go_after_the_boots(tl):
    sub = devloop.with_kernel_args(tl.for_run("tdp", ["dirty_log_test"]), "kvm.eager_page_split=N")
    assert sub.boots[0].cmdline == "hugepagesz=2M hugepages=64 kvm.eager_page_split=N"
    assert devloop.with_kernel_args(sub, " ") is sub


def test_a_config_boot_keeps_its_kernel(tl):
    sub = tl.for_run("kasan-tdp", ["dirty_log_test"])
    assert sub.boots[0].config == "kasan"


def test_a_config_names_a_kernel_of_its_own():
    prof = profile.load("x86_64")
    assert kernel.Build(prof, "patched", True, ("kasan",)).name == "x86_64-patched-debug-kasan"
    assert kernel.Build(prof, "patched", True).name == "x86_64-patched-debug"


def test_the_cli_reads_run_and_shell_options():
    a = cli.parser().parse_args(["run", "--arch", "arm64", "--boot", "vhe", "--test", "x,y",
                                 "--args=", "--kernel-args=a=1"])
    assert (a.arch, a.boot, a.test, a.args, a.kernel_args) == ("arm64", "vhe", "x,y", "", "a=1")
    assert cli.parser().parse_args(["run", "--boot", "tdp", "--test", "x"]).args is None
    s = cli.parser().parse_args(["shell"])
    assert (s.arch, s.boot, s.kernel_args, s.variant) == ("x86_64", None, "", "patched")


def test_run_and_shell_take_another_kernel():
    a = cli.parser().parse_args(["run", "--boot", "tdp", "--test", "x", "--variant", "vanilla"])
    assert a.variant == "vanilla"
    assert cli.parser().parse_args(["shell", "--variant", "split-fill"]).variant == "split-fill"
    prof = profile.load("arm64")
    assert devloop.testrun.test_build(prof, "vanilla", config="pages-16k").name == \
        "arm64-vanilla-debug-pages-16k"


def test_run_without_a_boot_names_the_boots():
    with pytest.raises(LabError, match=r"BOOT=<tdp\|legacy\|shadow"):
        devloop.run_list("x86_64", None, "dirty_log_test", None, "")


def test_list_shows_boots_and_tests(tl):
    text = testlist.describe(tl)
    assert "  kasan-tdp (full, kernel +kasan): -; command line: (default)" in text
    assert "    memslot_perf_test -s 32  [180 s]" in text
    assert "    hardware_disable_test  [skip: segfaults when linked static]" in text


def test_selftests_of_another_tree_build_beside_it(tmp_path):
    from lab import selftests
    b = kernel.Build(profile.load("x86_64"), "patched", True)
    assert selftests.out_dir(b) == b.out
    assert selftests.install_dir(b, tmp_path) == (
        tmp_path / ".out-selftests-x86_64-patched-debug/kselftest/kselftest_install")
    with pytest.raises(LabError, match="not a kernel tree with tools/testing/selftests/kvm"):
        selftests.check_source(tmp_path)
