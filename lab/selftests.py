"""KVM selftests, linked static against a kernel build's own UAPI headers.

The kernel's selftests Makefile does the work: with O= it builds into
<out>/kselftest and installs a kselftest collection (run_kselftest.sh, the
runner, kvm/ with the binaries and its settings file) into
<out>/kselftest/kselftest_install.
"""
import os
import shutil
from pathlib import Path

from lab import paths
from lab.kernel import Build
from lab.progress import LabError, compiler_errors, exclusive, jobs, run_logged, say


def out_dir(b: Build, src: Path | None = None) -> Path:
    """Where they build: in b's output directory, or, from another tree
    (make run SELFTESTS=<worktree>), in that tree's own beside it."""
    return b.out if src is None else src / f".out-selftests-{b.name}"


def install_dir(b: Build, src: Path | None = None) -> Path:
    return out_dir(b, src) / "kselftest" / "kselftest_install"


def installed(install: Path) -> set[str]:
    """The files of an install's kvm collection, as the lists name them."""
    kvm = install / "kvm"
    return {str(f.relative_to(kvm)) for f in kvm.rglob("*") if f.is_file()}


def check_source(src: Path) -> Path:
    src = src.resolve()
    if not (src / "tools/testing/selftests/kvm/Makefile").is_file():
        raise LabError(f"{src}: not a kernel tree with tools/testing/selftests/kvm")
    return src


def ccache_env() -> dict:
    """The selftests Makefile passes absolute -I paths and -g, so by default
    ccache hashes the checkout's path and a fresh clone elsewhere misses every
    object (x86: 112 of 112; 26 s of compiling alone, 63 s beside make check).
    base_dir makes the paths relative to build/<base>/, and the directory stays out
    of the hash: the debug info may then name another clone's directory,
    which no one reads in a test binary run in a guest."""
    return {"CCACHE_BASEDIR": str(paths.BASE_BUILD), "CCACHE_NOHASHDIR": "1"}


def build(b: Build, log: Path | None = None, src: Path | None = None) -> Path:
    """The kvm selftests of b's tree against b's UAPI headers, or those of
    the tree src against the same headers."""
    lock = b.lock if src is None else paths.BASE_BUILD / "locks" / f"selftests-{src.name}-{b.name}.lock"
    with exclusive(lock, f"selftests {b.name}" + (f" from {src}" if src else "")):
        return _build(b, log, src)


def _build(b: Build, log: Path | None, src: Path | None) -> Path:
    if not b.headers.exists():
        raise LabError(f"selftests {b.name}: no UAPI headers in {b.headers}; build the kernel first")
    cc = f"{b.profile.cross_compile}gcc"
    if not shutil.which(cc):
        raise LabError(f"selftests {b.name}: {cc} not found (make deps installs it)")
    dest = install_dir(b, src)
    if dest.exists():
        shutil.rmtree(dest)
    # The kvm Makefile does not make a test's object depend on the library
    # headers it includes: after a change to memstress.h, a test linked its
    # stale object against the new library and hung on a field that had
    # moved (2026-11-24). Build from scratch; ccache keeps it to seconds.
    objs = out_dir(b, src) / "kselftest" / "kvm"
    if objs.exists():
        shutil.rmtree(objs)
    argv = ["make", "-C", str((src or b.src) / "tools/testing/selftests"),
            f"O={out_dir(b, src)}", f"ARCH={b.profile.make_arch}", "TARGETS=kvm",
            f"-j{jobs()}", "install"]
    if src:
        # O= would make them look for the headers in that tree's directory.
        argv.append(f"KHDR_INCLUDES=-isystem {b.headers}")
    if b.profile.cross_compile:
        argv.append(f"CROSS_COMPILE={b.profile.cross_compile}")
    # LDFLAGS from the environment, not the command line: the kvm Makefile
    # appends -pthread and more with +=, which a command-line value would hide.
    env = dict(os.environ, LDFLAGS="-static")
    if shutil.which("ccache"):
        # make check builds them once per patch; most objects do not change.
        argv.append(f"CC=ccache {cc}")
        env |= ccache_env()
    if log is None:
        log = b.log("selftests" if src is None else f"selftests-{src.name}")
        log.unlink(missing_ok=True)
    say(f"selftests {b.name}: building kvm selftests, static (log: {log})")
    secs = run_logged(argv, log, f"selftests {b.name}", env=env, explain=compiler_errors)
    if not (dest / "run_kselftest.sh").exists():
        raise LabError(f"selftests {b.name}: install left no run_kselftest.sh in {dest}; log: {log}")
    say(f"selftests {b.name}: built in {secs:.0f} s -> {dest}")
    return dest
