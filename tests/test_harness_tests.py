"""The harness's own tests (lab/guest/kvm/): packed into the guest's kvm
collection beside the selftests, run as they are, and in every build, the
vanilla kernel's included (aging_mmu_lock_test.sh must fail there)."""
import gzip
import os
import stat
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab import initramfs, testlist, testrun
from lab.progress import LabError

SCRIPT = "aging_mmu_lock_test.sh"


def fake_install(root: Path, *names: str) -> Path:
    """A kselftest install with the runner and these kvm files."""
    (root / "kvm").mkdir(parents=True)
    (root / "kselftest").mkdir()
    (root / "run_kselftest.sh").write_text("#!/bin/sh\n")
    (root / "kvm" / "settings").write_text("timeout=0\n")
    for n in names:
        (root / "kvm" / n).write_text("binary\n")
    return root


def unpack(initrd: Path, into: Path) -> Path:
    into.mkdir()
    subprocess.run(["cpio", "-idm", "--quiet"], input=gzip.decompress(initrd.read_bytes()),
                   cwd=into, check=True)
    return into


@pytest.fixture
def build(tmp_path, monkeypatch):
    box = tmp_path / "busybox"
    box.write_text("busybox\n")
    monkeypatch.setattr(initramfs, "busybox", lambda arch: box)
    return SimpleNamespace(name="x86_64-patched-debug-lock-stat",
                           profile=SimpleNamespace(debian_arch="amd64"))


def test_the_harness_has_the_lock_stat_check():
    assert SCRIPT in initramfs.harness_tests()
    assert os.access(initramfs.HARNESS_TESTS / SCRIPT, os.X_OK)


def test_a_harness_test_is_packed_executable_beside_the_selftests(tmp_path, build):
    install = fake_install(tmp_path / "install", "dirty_log_perf_test")
    initrd = initramfs.pack(build, [SCRIPT, "dirty_log_perf_test"], [f"kvm:{SCRIPT}"],
                            {"lock-stat-tdp": "true\n"}, tmp_path / "i.cpio.gz", "t",
                            install=install)
    root = unpack(initrd, tmp_path / "root")
    packed = root / "kselftest" / "kvm" / SCRIPT
    assert packed.read_bytes() == (initramfs.HARNESS_TESTS / SCRIPT).read_bytes()
    assert stat.S_IMODE(packed.stat().st_mode) == 0o755
    assert (root / "kselftest" / "kvm" / "dirty_log_perf_test").read_text() == "binary\n"
    assert (root / "kselftest" / "kselftest-list.txt").read_text() == f"kvm:{SCRIPT}\n"


def test_a_harness_test_may_not_shadow_a_selftest(tmp_path, build):
    install = fake_install(tmp_path / "install", SCRIPT)
    with pytest.raises(LabError, match="install a file of that name too"):
        initramfs.pack(build, [SCRIPT], [], {}, tmp_path / "i.cpio.gz", "t", install=install)


def test_a_list_naming_a_missing_file_is_still_an_error(tmp_path, build):
    install = fake_install(tmp_path / "install")
    with pytest.raises(LabError, match="do not install"):
        initramfs.pack(build, [SCRIPT, "dirty_log_perf_test"], [], {}, tmp_path / "i.cpio.gz",
                       "t", install=install)


def test_the_vanilla_kernel_runs_a_harness_test(tmp_path):
    # the vanilla kernel's selftests lack the series' tests, which are skipped
    # there; the harness's own test is in every build and runs
    install = fake_install(tmp_path / "install", "dirty_log_perf_test")
    tl = testlist.parse("""
[[boot]]
name = "lock-stat-tdp"
config = "lock-stat"
[[test]]
name = "aging_mmu_lock_test.sh"
files = ["dirty_log_perf_test"]
boots = ["lock-stat-tdp"]
[[test]]
name = "aging_stress_test"
boots = ["lock-stat-tdp"]
""", "x86_64", "t")
    assert testrun.available(install) >= {SCRIPT, "dirty_log_perf_test"}
    vanilla = testrun.for_variant(tl, "vanilla", testrun.available(install))
    assert {t.name: t.skip for t in vanilla.tests} == {
        SCRIPT: "", "aging_stress_test": testlist.NOT_IN_VARIANT}


def test_the_x86_lock_stat_boots_run_the_check_in_each_mmu():
    tl = testlist.load("x86_64")
    boots = {b.name: b for b in tl.boots if b.config == "lock-stat"}
    assert {b.cmdline for b in boots.values()} == {"", "kvm.tdp_mmu=N", "kvm_amd.npt=0"}
    for name in boots:
        [t] = [t for t in tl.tests_for(name) if t.name == SCRIPT]
        assert t.must_run and not t.skip and "dirty_log_perf_test" in t.files
