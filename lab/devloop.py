"""make run, make shell and lab parse: the fast loop, one boot of the test kernel.

Both boot the kernel make test boots (the arch's patched debug build, or the
kernel the boot's `config` names), built only when kbuild finds it stale.
make run runs the named tests in one boot of the list and prints make test's
KTAP for them; make shell gives the guest's console to the terminal, with
every kvm selftest of the build in /kselftest/kvm. python3 -m lab parse
judges a saved console again with today's list and rules (a new [[flaky]]
regex is tried so), booting nothing.
"""
import dataclasses
import os
import re
import subprocess
from pathlib import Path

from lab import (console, initramfs, kernel, lanes, markers, paths, profile, qemu, selftests,
                 testlist, testrun)
from lab.progress import LabError, say


def split_names(text: str) -> list[str]:
    """TEST=a,b or "a b": the names, in order."""
    return [n for n in text.replace(",", " ").split() if n]


def run_list(arch: str, boot: str | None, tests: str, args: str | None,
             kernel_args: str) -> testlist.TestList:
    """The one-boot list make run runs (testlist.TestList.for_run), with
    kernel_args added to the boot's command line."""
    tl = testlist.load(arch)
    if not boot:
        raise LabError(f"name a boot: BOOT=<{'|'.join(b.name for b in tl.boots)}>")
    sub = tl.for_run(boot, split_names(tests), args)
    return with_kernel_args(sub, kernel_args)


def with_kernel_args(tl: testlist.TestList, kernel_args: str) -> testlist.TestList:
    if not kernel_args.strip():
        return tl
    boots = tuple(dataclasses.replace(b, cmdline=f"{b.cmdline} {kernel_args}".strip())
                  for b in tl.boots)
    return dataclasses.replace(tl, boots=boots)


def run(arch: str, boot: str | None, tests: str, args: str | None,
        kernel_args: str, selftests_src: Path | None = None,
        variant: str = "patched") -> testrun.BootReport:
    """selftests_src: a kernel tree (e.g. a git worktree of build/<base>/linux)
    whose kvm selftests to run, built against the test kernel's headers.
    variant: another kernel than the series' (e.g. vanilla, to see whether
    a failure is the base's), with its own selftests build."""
    prof = profile.load(arch)
    tl = run_list(arch, boot, tests, args, kernel_args)
    bt = tl.boots[0]
    src = selftests.check_source(selftests_src) if selftests_src else None
    # Several people run make run at once: an initramfs and a log of its own.
    tag = f"run-{os.getpid()}"
    initrd = paths.BASE_BUILD / f"initramfs-{arch}-{tag}.cpio.gz"
    try:
        b, initrd, tl = testrun.build_arch(prof, tl, variant, config=bt.config,
                                           dest=initrd, selftests_src=src)
        return testrun.run_boot(b, tl, initrd, bt, log_suffix=f"-{tag}")
    finally:
        initrd.unlink(missing_ok=True)


# What the console says once the shell is up: where things are, how to leave.
SHELL_SCRIPT = """echo "{marker} boot {boot}: kvm selftests in /kselftest/kvm (run_kselftest.sh in \
/kselftest); exit powers off; Ctrl-A x quits QEMU"
cd /kselftest/kvm
# cttyhack: the console becomes the shell's terminal, so Ctrl-C reaches the test.
setsid cttyhack sh || sh
"""


def shell(arch: str, boot: str | None, kernel_args: str,
          selftests_src: Path | None = None, variant: str = "patched") -> int:
    prof = profile.load(arch)
    tl = testlist.load(arch)
    bt = tl.boot(boot) if boot else tl.boots[0]
    tl = with_kernel_args(dataclasses.replace(tl, boots=(bt,)), kernel_args)
    bt = tl.boots[0]
    src = selftests.check_source(selftests_src) if selftests_src else None
    b = testrun.test_build(prof, variant, config=bt.config)
    with lanes.BUILD_LOCK:
        kernel.build(b)
        install = selftests.build(b, src=src)
    every = sorted({p.name for p in (install / "kvm").iterdir()
                    if p.is_file() and p.name != "settings"} | initramfs.harness_tests())
    initrd = initramfs.pack(b, every, [f"kvm:{n}" for n in every],
                            {"shell": SHELL_SCRIPT.format(marker=markers.SHELL, boot=bt.name)},
                            paths.BASE_BUILD / f"initramfs-{arch}-shell-{os.getpid()}.cpio.gz",
                            "make shell", install=install)
    argv = prof.qemu_argv(b.image, initrd,
                          f"lab.boot=shell {bt.cmdline}".strip(), serial="mon:stdio",
                          cpu=bt.cpu)
    say(f"shell {arch}/{bt.name}: {bt.cmdline or '(default command line)'}; "
        f"Ctrl-A x quits QEMU")
    # Interactive: the person at the console decides when it ends.
    try:
        return subprocess.call(argv)
    finally:
        initrd.unlink(missing_ok=True)


def console_arch(argv: str, con: qemu.Console) -> str | None:
    """The arch whose QEMU ran the console (the log's command line), or
    whose console device its kernel command line names."""
    profs = [profile.load(a) for a in profile.arches()]
    binary = argv.split(" ", 1)[0]
    for p in profs:
        if binary == p.qemu_binary or any(f"console={p.console}" in ln for ln in con.lines):
            return p.arch
    return None


def console_boot(argv: str, con: qemu.Console) -> str | None:
    """The boot the guest ran: lab.boot= on QEMU's command line, or init's
    LAB-BOOT line."""
    for ln in (argv, *con.lines):
        m = re.search(rf"^{markers.BOOT} (\S+)|\blab\.boot=(\S+)", ln)
        if m:
            return m.group(1) or m.group(2)
    return None


def parse(log: Path, arch: str | None, boot: str | None,
          tests: str | None) -> testrun.BootReport:
    """A saved console (build/<base>/logs/boot-*.log) judged as make test judges a
    boot: today's testlists/<base>/<arch>.toml, its [[flaky]] entries, the splat
    scan. tests: only these (a make run console), as make run lists them."""
    argv, con = qemu.read_log(log, testrun.DONE)
    arch = arch or console_arch(argv, con)
    if not arch:
        raise LabError(f"{log}: which arch's console is it? say --arch "
                       f"({', '.join(profile.arches())})")
    boot = boot or console_boot(argv, con)
    if not boot:
        raise LabError(f"{log}: no LAB-BOOT line or lab.boot= says which boot it ran; say --boot")
    tl = testlist.load(arch)
    tl = tl.for_run(boot, split_names(tests)) if tests else dataclasses.replace(
        tl, boots=(tl.boot(boot),))
    seen = console.read(con)
    rep = testrun.judge_boot(tl, boot, seen, log)
    crash = testrun.known_crash(tl, seen)
    if crash:
        rep.notes.append(f"{rep.label}: the guest kernel crashed, a known emulation flake "
                         f"({crash.why}); make test would run the rest in a second boot")
    return rep
