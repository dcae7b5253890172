"""apt-get for the harness: a private configuration per base, one apt command at a time.

A base's package comes from its own suite (bases/<name>.toml: uri, suite,
components, keyring), which the machine's /etc/apt need not name: 7.3's
trixie-backports on a bookworm host. So each base has an apt configuration
of its own under the cache, paths.CACHE/apt/<base>/: a sources.list of that
one line, empty sources.list.d/ and preferences.d/, its own lists/ and
cache/ (archives). `apt-get update` and `apt-get download pkg=version` run
with -o options that point apt there (private_options), so the machine's
sources, pins and package lists are neither read nor written; apt.conf.d
still applies (a proxy, say), its update hooks not (etc/apt.conf clears
them). No root is needed.

Every apt command the harness runs, these and the guests' busybox-static
from the machine's own sources, holds one lock, paths.CACHE/apt.lock: two
make trees of two bases at once would otherwise run apt on the same lists,
and apt refuses a locked lists directory instead of waiting.
"""
import shutil
import subprocess
import tempfile
from pathlib import Path

from lab import paths
from lab.progress import LabError, exclusive

# A suite that cannot be reached makes apt-get update warn and exit 0
# (apt < 2.6 knows no Error-Mode and does just that): its output is read
# as well (update_error).
UPDATE_OPTIONS = ("-o", "APT::Update::Error-Mode=any")


def root(base_name: str) -> Path:
    return paths.CACHE / "apt" / base_name


def lock() -> Path:
    return paths.CACHE / "apt.lock"


def sources_line(uri: str, suite: str, components: list[str] | tuple[str, ...],
                 keyring: str) -> str:
    """The one-line-style source of a suite, signed by keyring."""
    return f"deb [signed-by={keyring}] {uri} {suite} {' '.join(components)}\n"


# The machine's apt.conf.d still applies (a proxy, say), but not its hooks:
# an update of our private lists must not run the machine's cache cleaners
# or index builders (docker-clean, appstream, packagekit).
NO_HOOKS = ("#clear APT::Update::Post-Invoke;\n"
            "#clear APT::Update::Post-Invoke-Success;\n"
            "#clear APT::Update::Pre-Invoke;\n")


def private_options(where: Path) -> list[str]:
    """apt-get's options that make where its whole configuration of
    sources, pins, lists and archives, without the machine's update hooks."""
    etc = where / "etc"
    return ["-c", str(etc / "apt.conf"),
            "-o", f"Dir::Etc::SourceList={etc / 'sources.list'}",
            "-o", f"Dir::Etc::SourceParts={etc / 'sources.list.d'}",
            "-o", f"Dir::Etc::Preferences={etc / 'preferences'}",
            "-o", f"Dir::Etc::PreferencesParts={etc / 'preferences.d'}",
            "-o", f"Dir::State::Lists={where / 'lists'}",
            "-o", f"Dir::Cache={where / 'cache'}",
            "-o", "Acquire::Languages=none"]


def architectures_conf(architectures: list[str] | tuple[str, ...]) -> str:
    """apt.conf's lines that make apt index and download these Debian
    architectures, whatever dpkg on the machine knows: arm64's linux-config
    package on an amd64 host that never ran make deps."""
    if not architectures:
        return ""
    return ("#clear APT::Architectures;\nAPT::Architectures { "
            + " ".join(f'"{a}";' for a in architectures) + " };\n")


def prepare(where: Path, line: str, architectures: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Lay out the private configuration of one source line (and, when
    given, the Debian architectures its lists index); its options."""
    for d in ("etc/sources.list.d", "etc/preferences.d", "lists/partial",
              "cache/archives/partial"):
        (where / d).mkdir(parents=True, exist_ok=True)
    (where / "etc" / "sources.list").write_text(line)
    (where / "etc" / "apt.conf").write_text(NO_HOOKS + architectures_conf(architectures))
    return private_options(where)


def said(output: str) -> list[str]:
    return [ln.strip() for ln in output.splitlines() if ln.strip()]


def update_error(output: str, returncode: int) -> str:
    """Why apt-get update failed, in apt's words ("" if it did not): its
    last E: line, else a "W: Failed to fetch" (a suite not reached, said as
    a warning), else the reason under an Err: line."""
    lines = said(output)
    errs = [ln for ln in lines if ln.startswith("E:")]
    failed = [ln for ln in lines if ln.startswith("W:") and "Failed to fetch" in ln]
    if errs:
        # apt's closing "Some index files failed to download" says less
        # than the fetch that failed.
        real = [e for e in errs if "Some index files failed" not in e]
        return (real or errs)[-1]
    if failed:
        return failed[-1]
    for i, ln in enumerate(lines):
        if ln.startswith("Err:"):
            return ln + (f" {lines[i + 1]}" if i + 1 < len(lines) else "")
    if returncode != 0:
        return lines[-1] if lines else f"exit {returncode}, no output"
    return ""


# Seconds an apt command may take: the largest download, a base's 166 MB
# source package, took 4.4 s here with update; a mirror that stalls must
# not hold make test (or the apt lock) forever.
TIMEOUT = 20 * 60


def run(argv: list[str], cwd: Path | None = None,
        timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """One apt command, while no other of the harness's runs."""
    if not shutil.which(argv[0]):
        raise LabError(f"{argv[0]} not found: the harness fetches Debian packages with apt "
                       "(set BASE_TARBALL to use a local tarball)")
    with exclusive(lock(), "apt", doing="apt command"):
        try:
            return subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LabError(f"{' '.join(argv[:1] + argv[-2:])}: no end after {timeout:.0f} s "
                           "(a mirror that stopped answering?); killed") from None


def update(options: list[str], where_said: str) -> None:
    """apt-get update of a private configuration; where_said names the
    suite and URI in the error."""
    proc = run(["apt-get", *options, *UPDATE_OPTIONS, "update"])
    why = update_error(proc.stdout + proc.stderr, proc.returncode)
    if why:
        raise LabError(f"cannot reach {where_said}: apt-get update: {why}")


def download(spec: str, dest: Path, options: list[str] | None = None,
             where_said: str = "") -> Path:
    """apt-get download spec into dest (with options: from a private
    configuration); one-line LabError on any failure."""
    dest.mkdir(parents=True, exist_ok=True)
    proc = run(["apt-get", *(options or []), "download", spec], cwd=dest)
    if proc.returncode != 0:
        lines = said(proc.stderr + proc.stdout)
        errs = [ln for ln in lines if ln.startswith("E:")] or lines[-1:] or ["no output"]
        raise LabError(f"apt-get download {spec}{' from ' + where_said if where_said else ''} "
                       f"failed: {errs[-1]}")
    debs = sorted(dest.glob("*.deb"))
    if not debs:
        raise LabError(f"apt-get download {spec} succeeded but left no .deb in {dest}")
    return debs[-1]


def dpkg_deb_error(output: str, returncode: int) -> str:
    """What dpkg-deb said when it failed, on one line: its own lines (the
    cause, e.g. "unexpected end of file", is often not the last), else the
    last line of its tar or decompressor."""
    lines = said(output)
    own = [ln for ln in lines if ln.startswith("dpkg-deb")]
    return " | ".join(own or lines[-1:]) or f"exit {returncode}, no output"


class MissingMember(LabError):
    """A .deb without the file asked for; present: the names in that
    file's folder of the package (none: the folder is not there either)."""

    def __init__(self, message: str, present: list[str]):
        super().__init__(message)
        self.present = present


def deb_member(deb: Path, member: str, dest: Path) -> Path:
    """Extract one file of a .deb (dpkg-deb -x into a scratch dir); a .deb
    dpkg-deb cannot read (a truncated download, say) is a LabError naming
    it and what dpkg-deb said."""
    if not shutil.which("dpkg-deb"):
        raise LabError(f"dpkg-deb not found: it unpacks {deb.name} (apt: dpkg)")
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        proc = subprocess.run(["dpkg-deb", "-x", str(deb), tmp], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise LabError(f"dpkg-deb -x {deb} failed (exit {proc.returncode}; a truncated "
                           f"or damaged download?): "
                           f"{dpkg_deb_error(proc.stderr + proc.stdout, proc.returncode)}")
        src = Path(tmp) / member
        if not src.exists():
            folder = src.parent
            raise MissingMember(f"{deb.name} has no {member}", sorted(
                p.name for p in folder.iterdir()) if folder.is_dir() else [])
        shutil.move(src, dest)
    return dest
