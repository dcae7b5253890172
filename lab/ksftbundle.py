"""The kselftest bundle of an arch (make kselftest-tar), as the kernel's gen_tar makes one.

kselftest-<arch>.tar.gz is the kselftest install of make test's selftests
build (kselftest_install/: run_kselftest.sh, kselftest/, kvm/ with every kvm
selftest of the series) and the harness's own tests in kvm/, as the guest's
initramfs has them; ./run_kselftest.sh runs the whole kvm collection with
upstream's arguments. make lava's device jobs fetch this bundle.

kselftest-<arch>-<host>.tar.gz adds the list of a [[host]] of the arch's test
list (testlists/<base>/<arch>.toml) and runs only that: kselftest's runner
takes a test's arguments only from the environment (KSELFTEST_<NAME>_ARGS,
one per program, so not two sizes of one test) and a timeout per collection
folder (its `settings` file) or per run (-o). So each test of the host's
list is a collection of its own, kvm-host/<nn>/ (nn keeps the list's order:
the runner sorts collections), holding a wrapper named by the test's label
that runs the program from kvm/ with the host's arguments, and a settings
file with its timeout; kselftest-list.txt names these and nothing else. The
runner's own machinery then applies each timeout and reports
`not ok N selftests: kvm-host/03: <label> # TIMEOUT 1800 seconds`.
"""
import gzip
import io
import shlex
import tarfile
from dataclasses import dataclass
from pathlib import Path

from lab import buildcache, datafile, initramfs, paths, profile, selftests, testlist, testrun
from lab.progress import LabError, say

TOP = "kselftest_install"
HOST_COLLECTION = "kvm-host"
LISTING = "kselftest-list.txt"


@dataclass(frozen=True)
class HostCase:
    """One test of a host's list as the bundle runs it."""
    collection: str    # kvm-host/<nn>
    test: testlist.HostTest
    wrapper: str
    settings: str


def path(arch: str, host: str = "") -> Path:
    return paths.BASE_BUILD / f"kselftest-{arch}{'-' + host if host else ''}.tar.gz"


def wrapper(tl: testlist.TestList, host: testlist.Host, t: testlist.HostTest) -> str:
    # The runner splits a test's arguments at blanks and nothing else (its
    # KSELFTEST_<NAME>_ARGS is expanded unquoted): each word quoted, the same.
    argv = " ".join(shlex.quote(w) for w in [f"./{t.name}", *t.args.split()])
    return (f"#!/bin/sh\n"
            f"# {t.label} on {host.name}: {tl.file}'s [[host]] {host.name!r}, "
            f"written by make kselftest-tar.\n"
            f"# Its timeout, {t.timeout} s, is this folder's settings file.\n"
            f"# The kvm programs run from their own folder, as the runner runs them.\n"
            f'cd "$(dirname "$0")/../../kvm" || exit 1\n'
            f"exec {argv}\n")


def host_cases(tl: testlist.TestList, host: testlist.Host) -> list[HostCase]:
    width = max(2, len(str(len(host.tests))))
    return [HostCase(f"{HOST_COLLECTION}/{n:0{width}d}", t, wrapper(tl, host, t),
                     f"timeout={t.timeout}\n")
            for n, t in enumerate(host.tests, 1)]


def describe_host(tl: testlist.TestList, host: testlist.Host, cases: list[HostCase]) -> str:
    """kvm-host/host.txt: what the bundle runs and what the host needs."""
    lines = [f"{host.name} ({tl.arch}, {paths.BASE}): {host.why or '-'}",
             f"CPUs: {host.cpus}, memory: {host.memory}",
             f"kernel command line: {host.cmdline or '(any)'}",
             f"from {tl.file} by make kselftest-tar ARCH={tl.arch} HOST={host.name}", "",
             "run as root: ./run_kselftest.sh (all of them), ./run_kselftest.sh -l (their names),",
             "./run_kselftest.sh -t <name> (one of them)", ""]
    lines += [f"{c.collection}:{c.test.label}  {c.test.timeout} s  {c.test.name} {c.test.args}"
              .rstrip() for c in cases]
    return "\n".join(lines) + "\n"


def _program_files(tl: testlist.TestList, t: testlist.HostTest) -> set[str]:
    """The files of the kvm collection a host test runs: its program and the
    files the list's entries of it name."""
    return {t.name, *(f for e in tl.tests if e.name == t.name for f in e.files)}


class _Tar:
    """A tar whose members are all root's, with one time: the same files
    give the same bytes."""

    def __init__(self, tar: tarfile.TarFile, when: int):
        self.tar, self.when = tar, when

    def _owned(self, ti: tarfile.TarInfo) -> tarfile.TarInfo:
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = "root"
        ti.mtime = self.when
        return ti

    def file(self, path: Path, name: str) -> None:
        ti = self._owned(self.tar.gettarinfo(path, name))
        if ti.isfile():
            with open(path, "rb") as f:
                self.tar.addfile(ti, f)
        else:
            self.tar.addfile(ti)

    def text(self, name: str, text: str, mode: int) -> None:
        data = text.encode()
        ti = self._owned(tarfile.TarInfo(name))
        ti.size, ti.mode = len(data), mode
        self.tar.addfile(ti, io.BytesIO(data))

    def dir(self, name: str) -> None:
        ti = self._owned(tarfile.TarInfo(name))
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
        self.tar.addfile(ti)


def write(install: Path, dest: Path, tl: testlist.TestList | None = None,
          host: testlist.Host | None = None) -> Path:
    """dest, the bundle of the kselftest install install: with host (a [[host]]
    of tl), its list as kselftest-list.txt. The same install and list give
    the same bytes, whatever dest's name."""
    if not (install / "run_kselftest.sh").is_file():
        raise LabError(f"{install}: no kselftest install (no run_kselftest.sh)")
    ours = sorted(initramfs.harness_tests())
    clash = [n for n in ours if (install / "kvm" / n).exists()]
    if clash:
        raise LabError(f"{initramfs.HARNESS_TESTS}: the kvm selftests in {install} install "
                       f"{', '.join(clash)} too; rename the harness's test")
    if host:
        have = selftests.installed(install) | set(ours)
        cases = host_cases(tl, host)
        for c in cases:
            lack = sorted(_program_files(tl, c.test) - have)
            if lack:
                raise LabError(f"{tl.file}: [[host]] {host.name!r}, test {c.test.name!r}: the "
                               f"kvm selftests in {install} lack {', '.join(lack)}")
        listing = "".join(f"{c.collection}:{c.test.label}\n" for c in cases)
    else:
        cases = []
        listing = (install / LISTING).read_text() if (install / LISTING).exists() else ""
        listing += "".join(f"kvm:{n}\n" for n in ours if f"kvm:{n}" not in listing.split())
    when = int((install / "run_kselftest.sh").stat().st_mtime)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        # gzip's own level, as gen_tar's tar: 9 took 27.5 s of CPU for x86's 154 MiB
        # install, 6 took 8.0 s, for a file 0.4 % larger (2026-11-25).
        with open(part, "wb") as f, \
                gzip.GzipFile("", "wb", compresslevel=6, fileobj=f, mtime=when) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tf:
            tar = _Tar(tf, when)
            tar.file(install, TOP)
            for p in sorted(install.rglob("*")):
                if p != install / LISTING:
                    tar.file(p, f"{TOP}/{p.relative_to(install)}")
            for n in ours:
                # the runner runs what is executable only
                tar.text(f"{TOP}/kvm/{n}", (initramfs.HARNESS_TESTS / n).read_text(), 0o755)
            if cases:
                tar.dir(f"{TOP}/{HOST_COLLECTION}")
                tar.text(f"{TOP}/{HOST_COLLECTION}/host.txt", describe_host(tl, host, cases), 0o644)
                for c in cases:
                    tar.dir(f"{TOP}/{c.collection}")
                    tar.text(f"{TOP}/{c.collection}/{c.test.label}", c.wrapper, 0o755)
                    tar.text(f"{TOP}/{c.collection}/settings", c.settings, 0o644)
            tar.text(f"{TOP}/{LISTING}", listing, 0o644)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    part.rename(dest)
    return dest


def make(arch: str, host_name: str = "") -> Path:
    """make kselftest-tar: the kvm selftests of make test's build of arch
    (kept builds reused, as make test reuses them), bundled, with the
    host's list when host_name is given."""
    tl = testlist.load(arch)
    host = tl.host(host_name) if host_name else None
    b = testrun.test_build(profile.load(arch))
    # The selftests build against the kernel build's UAPI headers.
    buildcache.build_kernel(b)
    install = buildcache.build_selftests(b)
    dest = write(install, path(arch, host_name), tl, host)
    what = (f"{len(host.tests)} tests of {tl.file}'s [[host]] {host.name!r}, "
            f"./run_kselftest.sh runs them" if host
            else "every kvm selftest, ./run_kselftest.sh runs them with upstream's arguments")
    say(f"kselftest-tar: {datafile.origin(dest)} ({dest.stat().st_size >> 20} MiB): {what}")
    return dest
