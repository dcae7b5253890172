"""The bases: Debian's kernel source packages the series is carried on.

bases/<name>.toml, one per base (6.12, the default, and 7.3), pins the
package, its version and the sha256 of the tarball it ships, and says
where apt finds it (uri, suite, components, keyring). A run works on one
base, paths.BASE (make BASE=<name>); its package is fetched from its suite
with a private apt configuration (lab/apt.py) and its tarball kept in the
cache, checked by sha256. Users with their own source can override it
with LAB_BASE_TARBALL (a kernel tarball) or LAB_BASE_TREE (an extracted
kernel tree); those are used as given.
"""
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab import apt, datafile, paths
from lab.datafile import Key, Table
from lab.progress import LabError, say


@dataclass(frozen=True)
class Base:
    name: str                     # bases/<name>.toml, BASE=<name>
    package: str
    version: str
    sha256: str
    uri: str = ""
    suite: str = ""
    components: tuple[str, ...] = ("main",)
    keyring: str = ""

    @property
    def tarball_name(self) -> str:
        # linux-source-6.12 ships usr/src/linux-source-6.12.tar.xz
        return f"{self.package}.tar.xz"

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"

    @property
    def where(self) -> str:
        """The suite, as messages name it."""
        return f"{self.suite} at {self.uri}"

    @property
    def sources_line(self) -> str:
        return apt.sources_line(self.uri, self.suite, self.components, self.keyring)


FILE = Table({"package": Key(str), "version": Key(str), "sha256": Key(str),
              "uri": Key(str), "suite": Key(str), "components": Key([str], ["main"]),
              "keyring": Key(str)})
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~_/-]*")


def _base(data: dict, name: str, origin: str) -> Base:
    sha = data["sha256"].lower()
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise LabError(f"{origin}: 'sha256' must be 64 hex digits, not {data['sha256']!r}")
    if not re.fullmatch(r"(https?|file):/\S+", data["uri"]):
        raise LabError(f"{origin}: 'uri' must be an http(s):// or file:/ archive URI, "
                       f"not {data['uri']!r}")
    for key, words in (("suite", [data["suite"]]), ("components", data["components"])):
        if not words or not all(WORD_RE.fullmatch(w) for w in words):
            raise LabError(f"{origin}: {key!r} must be apt's word(s), not {data[key]!r}")
    if not data["keyring"].startswith("/"):
        raise LabError(f"{origin}: 'keyring' must be an absolute path (apt's signed-by), "
                       f"not {data['keyring']!r}")
    return Base(name, data["package"], data["version"], sha, data["uri"], data["suite"],
                tuple(data["components"]), data["keyring"])


def parse(text: str, name: str = paths.DEFAULT_BASE, origin: str | None = None) -> Base:
    origin = origin or f"bases/{name}.toml"
    return _base(datafile.parse(text, FILE, origin), name, origin)


def _version_key(name: str) -> tuple:
    return tuple(int(n) for n in re.findall(r"\d+", name)), name


def names(directory: Path | None = None) -> list[str]:
    """The bases, the default first, then by version: the order make test
    runs them in."""
    found = [f.stem for f in (directory or paths.BASES).glob("*.toml")]
    return sorted(found, key=lambda n: (n != paths.DEFAULT_BASE, _version_key(n)))


def check_name(name: str, directory: Path | None = None) -> str:
    """name, if it names a base; else the one line that lists them."""
    known = names(directory)
    if name not in known:
        raise LabError(f"BASE={name}: no such base; the bases (bases/<name>.toml): "
                       f"{', '.join(known) or '(none)'}")
    return name


def load(name: str | None = None, directory: Path | None = None) -> Base:
    name = check_name(name or paths.BASE, directory)
    conf = (directory or paths.BASES) / f"{name}.toml"
    return _base(datafile.read(conf, FILE), name, datafile.origin(conf))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# apt's words for a suite that has no such package or version.
NOT_THERE = ("was not found", "Unable to locate", "Can't select", "has no installation candidate")


def fetch_deb(b: Base, dest: Path) -> Path:
    """b's package from its suite, into dest, with the base's private apt
    configuration: apt-get update, then apt-get download package=version."""
    if not Path(b.keyring).exists():
        raise LabError(f"base {b.name}: the keyring {b.keyring} that signs {b.where} is "
                       f"missing (apt: debian-archive-keyring)")
    options = apt.prepare(apt.root(b.name), b.sources_line)
    say(f"base {b.name}: fetching {b.package}={b.version} from {b.where} (apt, "
        f"configuration in {apt.root(b.name)})")
    try:
        apt.update(options, b.where)
    except LabError as e:
        raise LabError(f"base {b.name}: {e}") from e
    try:
        return apt.download(f"{b.package}={b.version}", dest, options, b.where)
    except LabError as e:
        if any(w in str(e) for w in NOT_THERE):
            raise LabError(f"{e} (the suite no longer has it? bump bases/{b.name}.toml, or "
                           f"point its uri at snapshot.debian.org, or set BASE_TARBALL)") from e
        raise


def tarball(b: Base | None = None) -> Path:
    """Path to the verified base tarball, fetched with apt if needed."""
    override = os.environ.get("LAB_BASE_TARBALL")
    if override:
        p = Path(override).resolve()
        if not p.is_file():
            raise LabError(f"LAB_BASE_TARBALL={override}: no such file")
        say(f"base: using {p} (override, sha256 {sha256_of(p)[:16]}..., not checked against "
            f"bases/{paths.BASE}.toml)")
        return p
    b = b or load()
    cached = paths.CACHE / f"{b.package}_{b.version}.tar.xz"
    if cached.exists():
        got = sha256_of(cached)
        if got == b.sha256:
            return cached
        say(f"base: cached {cached} has sha256 {got}, expected {b.sha256}; fetching again")
        cached.unlink()
    with tempfile.TemporaryDirectory(dir=_mkdir(paths.CACHE)) as tmp:
        deb = fetch_deb(b, Path(tmp))
        part = Path(tmp) / "tarball"
        apt.deb_member(deb, f"usr/src/{b.tarball_name}", part)
        got = sha256_of(part)
        if got != b.sha256:
            raise LabError(f"base: sha256 mismatch for {b.tarball_name} from {deb.name}: "
                           f"expected {b.sha256}, got {got}")
        part.rename(cached)
    return cached


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def source() -> tuple[Path, str]:
    """(the kernel source make tree imports, its label): LAB_BASE_TREE, or
    LAB_BASE_TARBALL, or the selected base's package."""
    override = os.environ.get("LAB_BASE_TREE")
    if override:
        p = Path(override).resolve()
        if not (p / "Makefile").is_file() or not (p / "virt/kvm").is_dir():
            raise LabError(f"LAB_BASE_TREE={override} does not look like a kernel tree")
        say(f"base: using the tree {p} (override)")
        return p, f"tree {p}"
    tb = tarball()
    if os.environ.get("LAB_BASE_TARBALL"):
        return tb, f"tarball {tb.name} {sha256_of(tb)[:16]}"
    return tb, load().label
