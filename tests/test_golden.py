"""Golden files: the guest boot script and QEMU's command line of every boot
of every arch of every base, as make test generates them today
(tests/fixtures/golden/<base>/).

A change to them shows here as a diff to read. When it is meant (a list,
profile or script change), write them again and commit the result:

    LAB_GOLDEN=update build/venv/bin/python -m pytest -q tests/test_golden.py
"""
import os
import shlex
from pathlib import Path

import pytest

from lab import base, initramfs, paths, profile, testlist, testrun

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
UPDATE = os.environ.get("LAB_GOLDEN") == "update"


def load(b: str, arch: str) -> testlist.TestList:
    return testlist.load(arch, paths.ROOT / "testlists" / b)


def boots():
    return [(b, a, bt.name) for b in base.names() for a in profile.arches()
            for bt in load(b, a).boots]


def qemu_line(b: str, arch: str, boot: str) -> str:
    """The command line run_boot gives QEMU, the base's build/<base>/
    written as $BUILD so the file is the same in every checkout (and as it
    was when 6.12's was build/)."""
    tl = load(b, arch)
    bt = tl.boot(boot)
    kern = testrun.test_build(profile.load(arch), config=bt.config)
    initrd = paths.BASE_BUILD / f"initramfs-{kern.name}.cpio.gz"
    line = shlex.join(testrun.boot_argv(kern, initrd, bt))
    return line.replace(str(paths.BASE_BUILD), "$BUILD") + "\n"


def check(name: str, text: str):
    f = GOLDEN / name
    if UPDATE:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    assert f.exists(), f"no {f}: LAB_GOLDEN=update writes it (tests/test_golden.py)"
    assert text == f.read_text(), f"{name} changed; if meant: LAB_GOLDEN=update (tests/test_golden.py)"


@pytest.mark.parametrize("b, arch, boot", boots())
def test_boot_script(b, arch, boot):
    check(f"{b}/{arch}/{boot}.sh", initramfs.boot_script(load(b, arch), boot))


@pytest.mark.parametrize("b, arch, boot", boots())
def test_qemu_command_line(b, arch, boot):
    check(f"{b}/{arch}/{boot}.qemu", qemu_line(b, arch, boot))


def test_no_golden_file_is_left_over():
    # a boot renamed or removed leaves its files behind otherwise
    want = {f"{b}/{a}/{bt}{ext}" for b, a, bt in boots() for ext in (".sh", ".qemu")}
    have = {str(f.relative_to(GOLDEN)) for f in GOLDEN.rglob("*") if f.is_file()}
    if UPDATE:
        for extra in have - want:
            (GOLDEN / extra).unlink()
        have &= want
    assert have == want
