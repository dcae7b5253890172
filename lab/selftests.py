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


def install_dir(b: Build) -> Path:
    return b.out / "kselftest" / "kselftest_install"


def ccache_env() -> dict:
    """The selftests Makefile passes absolute -I paths and -g, so by default
    ccache hashes the checkout's path and a fresh clone elsewhere misses every
    object (x86: 112 of 112; 26 s of compiling alone, 63 s beside make check).
    base_dir makes the paths relative to build/, and the directory stays out
    of the hash: the debug info may then name another clone's directory,
    which no one reads in a test binary run in a guest."""
    return {"CCACHE_BASEDIR": str(paths.BUILD), "CCACHE_NOHASHDIR": "1"}


def build(b: Build, log: Path | None = None) -> Path:
    with exclusive(b.lock, f"selftests {b.name}"):
        return _build(b, log)


def _build(b: Build, log: Path | None = None) -> Path:
    if not b.headers.exists():
        raise LabError(f"selftests {b.name}: no UAPI headers in {b.headers}; build the kernel first")
    cc = f"{b.profile.cross_compile}gcc"
    if not shutil.which(cc):
        raise LabError(f"selftests {b.name}: {cc} not found (make deps installs it)")
    dest = install_dir(b)
    if dest.exists():
        shutil.rmtree(dest)
    argv = ["make", "-C", str(b.src / "tools/testing/selftests"), f"O={b.out}",
            f"ARCH={b.profile.make_arch}", "TARGETS=kvm", f"-j{jobs()}", "install"]
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
        log = b.log("selftests")
        log.unlink(missing_ok=True)
    say(f"selftests {b.name}: building kvm selftests, static (log: {log})")
    secs = run_logged(argv, log, f"selftests {b.name}", env=env, explain=compiler_errors)
    if not (dest / "run_kselftest.sh").exists():
        raise LabError(f"selftests {b.name}: install left no run_kselftest.sh in {dest}; log: {log}")
    say(f"selftests {b.name}: built in {secs:.0f} s -> {dest}")
    return dest
