import subprocess

import pytest

from lab import initramfs, profile, testlist
from lab.progress import LabError

LIST = """
[defaults]
timeout = 60
[[boot]]
name = "tdp"
[[boot]]
name = "shadow"
cmdline = "kvm_amd.npt=0"
[[test]]
name = "dirty_log_test"
args = "-i 3"
[[test]]
name = "nx_huge_pages_test.sh"
timeout = 180
boots = ["tdp"]
[[test]]
name = "hardware_disable_test"
skip = "segfaults when linked static"
"""


def test_parse_defaults_and_boots():
    tl = testlist.parse(LIST, "x86_64", "t")
    assert [t.name for t in tl.tests_for("shadow")] == ["dirty_log_test", "hardware_disable_test"]
    nx = tl.tests[1]
    assert (nx.basename, nx.timeout, nx.boots) == ("nx_huge_pages_test.sh", 180, ("tdp",))
    assert tl.tests[0].timeout == 60
    # skipped tests take no time from the watchdog budget
    assert tl.budget("tdp", 90) == 90 + 65 + 185


def test_args_variable_matches_kselftest_runner():
    # runner.sh: tr -c "[:alnum:]_" "_" on the basename, then upper case
    tl = testlist.parse(LIST, "x86_64", "t")
    assert tl.tests[1].args_var == "KSELFTEST_NX_HUGE_PAGES_TEST_SH_ARGS"


def test_boot_script_runs_each_test_with_its_args_and_timeout():
    tl = testlist.parse(LIST, "x86_64", "t")
    script = initramfs.boot_script(tl, "tdp")
    assert "KSELFTEST_DIRTY_LOG_TEST_ARGS='-i 3' ./run_kselftest.sh -o 60 -t kvm:dirty_log_test" in script
    assert "-o 180 -t kvm:nx_huge_pages_test.sh" in script
    assert "hardware_disable_test" not in script


@pytest.mark.parametrize("bad, msg", [
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\nboots=["b"]\n', "unknown boot"),
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\nargz="-i 1"\n', "unknown keys"),
    ('[[test]]\nname="x"\n', "no \\[\\[boot\\]\\]"),
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\n[[test]]\nname="x"\n', "twice"),
])
def test_bad_lists_are_refused(bad, msg):
    with pytest.raises(LabError, match=msg):
        testlist.parse(bad, "x86_64", "t")


@pytest.mark.parametrize("arch", profile.arches())
def test_shipped_lists_and_profiles_load(arch):
    tl = testlist.load(arch)
    curated = {t.basename for t in tl.tests}
    for required in ("dirty_log_test", "dirty_log_perf_test", "demand_paging_test",
                     "access_tracking_perf_test", "kvm_page_table_test",
                     "memslot_modification_stress_test", "memslot_perf_test",
                     "set_memory_region_test", "max_guest_memory_test"):
        assert required in curated
    p = profile.load(arch)
    argv = p.qemu_argv("Image", "initrd", "lab.boot=x")
    assert "-no-reboot" in argv and argv[argv.index("-append") + 1].endswith("lab.boot=x")


def test_unknown_arch_is_named():
    with pytest.raises(LabError, match="unknown ARCH=riscv"):
        profile.load("riscv")


@pytest.mark.parametrize("cmdline, ran", [
    ("lab.boot=tdp", ["dirty_log_test", "nx_huge_pages_test.sh"]),
    ("lab.boot=tdp lab.from=2 x=1", ["nx_huge_pages_test.sh"]),
])
def test_boot_script_resumes_from_the_numbered_test(tmp_path, cmdline, ran):
    tl = testlist.parse(LIST, "x86_64", "t")
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    runner = tmp_path / "run_kselftest.sh"
    runner.write_text('#!/bin/sh\necho "$4"\n')
    runner.chmod(0o755)
    script = initramfs.boot_script(tl, "tdp").replace("/proc/cmdline", str(tmp_path / "cmdline"))
    out = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == [f"kvm:{t}" for t in ran]
