"""The guest's initramfs: busybox-static, the curated kvm selftests, an init.

busybox comes from Debian's busybox-static for the guest's architecture,
fetched with apt-get download from the machine's own sources (so arm64's
needs no multiarch install), under lab/apt.py's lock.
"""
import gzip
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from lab import apt, deps, markers, paths
from lab.kernel import Build
from lab.progress import LabError, say
from lab.selftests import install_dir
from lab.testlist import RETRIES_PER_BOOT, TestList

GUEST_FILES = Path(__file__).parent / "guest"
# Tests the harness owns, not the kernel tree (e.g. one that reads
# /proc/lock_stat, which no kvm selftest upstream would): packed into the
# guest's kvm collection beside the selftests, and named in the lists as they
# are. One of them may not take the name of a file the selftests install.
HARNESS_TESTS = GUEST_FILES / "kvm"


def harness_tests() -> set[str]:
    """The names of the harness's own tests, as the lists name them."""
    return {str(f.relative_to(HARNESS_TESTS)) for f in HARNESS_TESTS.rglob("*") if f.is_file()}


def busybox(debian_arch: str) -> Path:
    cached = paths.CACHE / f"busybox-static-{debian_arch}"
    if cached.exists():
        return cached
    if debian_arch in deps.missing_archs():
        raise LabError(f"cannot fetch busybox-static:{debian_arch}: dpkg has no {debian_arch} "
                       f"architecture; make deps adds it (dpkg --add-architecture "
                       f"{debian_arch}; apt-get update)")
    say(f"initramfs: fetching busybox-static:{debian_arch} with apt-get")
    paths.CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=paths.CACHE) as tmp:
        deb = apt.download(f"busybox-static:{debian_arch}", Path(tmp))
        part = Path(tmp) / "busybox"
        apt.deb_member(deb, "bin/busybox", part)
        part.chmod(0o755)
        part.rename(cached)
    return cached


# A failed test runs once more, at most RETRIES_PER_BOOT tests per boot
# (retries_left, which boot_script sets; run_test runs in the script's own
# shell); the host decides what the second run means (testlist.py,
# [[flaky]]). The runner's exit code does not tell a failure, so the guest's
# timeout wrapper leaves the test's in /tmp/lab-test-rc (0 pass, 4 skip as
# kselftest's runner counts them). The runner's output goes straight to the
# console: through a pipe, its sed would hold a test's output until the test
# ends.
RUN_TEST = r"""run_test() {
	rm -f /tmp/lab-test-rc
	"$@"
	rc=$(cat /tmp/lab-test-rc 2>/dev/null)
	case "$rc" in '' | 0 | 4) return 0 ;; esac
	[ "$retries_left" -gt 0 ] || return 0
	retries_left=$((retries_left - 1))
	for last in "$@"; do :; done
	echo "@RETRY@ ${last#kvm:}"
	"$@"
}""".replace("@RETRY@", markers.RETRY)


def boot_script(tests: TestList, boot: str) -> str:
    """Shell lines that run each test of the boot with kselftest's runner.

    One runner call per test: each gets its own timeout (-o) and arguments
    (the runner's KSELFTEST_<NAME>_ARGS variable). Skipped tests are not run;
    the host reports them from the list. Tests are numbered from 1, and
    lab.from=<n> on the command line starts at the n-th (a resumed boot).
    """
    lines = [f"# generated from {tests.file}, boot {boot}",
             f"retries_left={RETRIES_PER_BOOT}", RUN_TEST,
             "from=$(sed -n 's/.*lab\\.from=\\([0-9]*\\).*/\\1/p' /proc/cmdline)"]
    for n, t in enumerate(runnable(tests, boot), 1):
        lines.append(f"[ {n} -lt \"${{from:-1}}\" ] || run_test env "
                     f"{t.args_var}={shlex.quote(t.args)} "
                     f"./run_kselftest.sh -o {t.timeout} -t kvm:{t.name}")
    return "\n".join(lines) + "\n"


def runnable(tests: TestList, boot: str) -> list:
    """The tests a boot runs, in order (what lab.from= counts)."""
    return [t for t in tests.tests_for(boot) if not t.skip]


def build(b: Build, tests: TestList, dest: Path, install: Path | None = None) -> Path:
    """The test initramfs: the curated tests and one script per boot (from
    the kselftest install dir install, default b's)."""
    files = [name for t in tests.tests if not t.skip for name in (t.name, *t.files)]
    listed = [f"kvm:{t.name}" for t in tests.tests if not t.skip]
    scripts = {boot.name: boot_script(tests, boot.name) for boot in tests.boots}
    return pack(b, files, listed, scripts, dest, tests.file, install=install)


def pack(b: Build, files: list[str], listed: list[str], scripts: dict[str, str],
         dest: Path, origin: str, selftests_of: Build | None = None,
         install: Path | None = None) -> Path:
    """Write a gzipped newc initramfs: busybox, init, kselftest's runner, the
    named files of the kvm collection (of selftests_of, default b) or of the
    harness's own tests (HARNESS_TESTS), and the boot scripts init chooses
    from by lab.boot=."""
    src = install or install_dir(selftests_of or b)
    if not (src / "run_kselftest.sh").exists():
        raise LabError(f"initramfs {b.name}: no kselftest install in {src}; build the selftests first")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for d in ("bin", "usr/bin", "lab/boots", "kselftest/kvm"):
            (root / d).mkdir(parents=True)
        shutil.copy2(busybox(b.profile.debian_arch), root / "bin/busybox")
        (root / "bin/sh").symlink_to("busybox")
        # Upstream wrapper scripts ask `whoami`, which needs root in /etc/passwd.
        (root / "etc").mkdir()
        (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
        (root / "etc/group").write_text("root:x:0:\n")
        for name, where in (("init", "init"), ("timeout", "usr/bin/timeout"),
                            ("bash", "bin/bash")):
            shutil.copy2(GUEST_FILES / name, root / where)
            os.chmod(root / where, 0o755)
        ks = root / "kselftest"
        shutil.copy2(src / "run_kselftest.sh", ks)
        shutil.copytree(src / "kselftest", ks / "kselftest")
        shutil.copy2(src / "kvm" / "settings", ks / "kvm")
        ours = harness_tests()
        for name in sorted(set(files)):
            f = src / "kvm" / name
            if name in ours:
                if f.exists():
                    raise LabError(f"{HARNESS_TESTS / name}: the kvm selftests of {b.name} "
                                   f"install a file of that name too ({f}); rename the "
                                   f"harness's test")
                f = HARNESS_TESTS / name
            elif not f.exists():
                raise LabError(f"{origin} names {name}, which the kvm selftests of "
                               f"{b.name} do not install ({src / 'kvm'})")
            shutil.copy2(f, ks / "kvm" / name)
            if name in ours:        # the runner runs what is executable only
                os.chmod(ks / "kvm" / name, 0o755)
        (ks / "kselftest-list.txt").write_text("".join(f"{x}\n" for x in sorted(set(listed))))
        for name, text in scripts.items():
            (root / "lab/boots" / f"{name}.sh").write_text(text)
        dest.parent.mkdir(parents=True, exist_ok=True)
        names = subprocess.run("find . -print0 | sort -z", shell=True, cwd=root,
                               capture_output=True, check=True).stdout
        cpio = subprocess.run(["cpio", "--null", "-o", "-H", "newc", "--quiet", "-R", "0:0"],
                              input=names, cwd=root, capture_output=True)
        if cpio.returncode != 0:
            raise LabError(f"initramfs {b.name}: cpio failed: {cpio.stderr.decode().strip()}")
        dest.write_bytes(gzip.compress(cpio.stdout, compresslevel=1, mtime=0))
    say(f"initramfs {b.name}: {dest} ({dest.stat().st_size >> 20} MiB, {len(set(files))} programs)")
    return dest
