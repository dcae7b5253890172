"""The bases: Debian's kernel source packages the series is carried on.

bases/<name>.toml, one per base (6.12, the default, and 7.3), pins the
package, its version and the sha256 of the tarball it ships, and says
where apt finds it (uri, suite, components, keyring). A run works on one
base, paths.BASE (make BASE=<name>); its package is fetched from its suite
with a private apt configuration (lab/apt.py) and its tarball kept in the
cache, checked by sha256. Users with their own source can override it
with LAB_BASE_TARBALL (a kernel tarball) or LAB_BASE_TREE (an extracted
kernel tree); those are used as given.

A base's [distro_config] pins Debian's kernel configs of the same version
(linux-config-<v>, one binary package per Debian arch, from the same suite),
which make deb CONFIG=distro and make check start from: the sha256 of each
arch's generic config, fetched and kept in the cache as the tarball is.
"""
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab import apt, datafile, paths, profile
from lab.datafile import Key, Table
from lab.progress import LabError, say

SHA256_RE = re.compile(r"[0-9a-f]{64}")
# Debian's kernel configs: usr/src/linux-config-<v>/config.<arch>_<featureset>_<flavour>.xz
# (linux's debian/config). The generic kernel of an arch is featureset
# "none", flavour named after the arch (amd64_none_amd64); the others are
# cloud-<arch>, rt, arm64-16k and the like.
CONFIG_NAME_RE = re.compile(r"config\.(?P<arch>[a-z0-9]+)_(?P<featureset>[a-z0-9]+)_"
                            r"(?P<flavour>[a-z0-9-]+)\.xz")


def config_name(debian_arch: str) -> str:
    """The file of Debian's generic kernel config of a Debian arch."""
    return f"config.{debian_arch}_none_{debian_arch}.xz"


def parse_config_name(name: str) -> tuple[str, str, str] | None:
    """(arch, featureset, flavour) of one of Debian's config files; None
    for any other name."""
    m = CONFIG_NAME_RE.fullmatch(name)
    return (m["arch"], m["featureset"], m["flavour"]) if m else None


@dataclass(frozen=True)
class DistroConfig:
    """Debian's configs of the base's version (bases/<base>.toml [distro_config])."""
    package: str                  # linux-config-6.12, Architecture: any
    version: str
    # Debian arch -> sha256 of its config_name() file as the package ships it.
    sha256: tuple[tuple[str, str], ...]

    def member(self, debian_arch: str) -> str:
        return f"usr/src/{self.package}/{config_name(debian_arch)}"

    def spec(self, debian_arch: str) -> str:
        return f"{self.package}:{debian_arch}={self.version}"


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
    distro_config: DistroConfig | None = None

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
              "keyring": Key(str),
              "distro_config": Key(Table({"package": Key(str), "version": Key(str),
                                          "sha256": Key(dict)}), None)})
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~_/-]*")


def _distro_config(data: dict | None, origin: str) -> DistroConfig | None:
    if data is None:
        return None
    known = sorted({profile.load(a).debian_arch for a in profile.arches()})
    sums = {}
    for arch, sha in data["sha256"].items():
        if arch not in known:
            raise LabError(f"{origin}: [distro_config] sha256: {arch!r} is no Debian arch of "
                           f"lab/arch_profiles/ ({', '.join(known)})")
        if not isinstance(sha, str) or not SHA256_RE.fullmatch(sha.lower()):
            raise LabError(f"{origin}: [distro_config] sha256 of {arch} must be 64 hex "
                           f"digits, not {sha!r}")
        sums[arch] = sha.lower()
    return DistroConfig(data["package"], data["version"], tuple(sorted(sums.items())))


def _base(data: dict, name: str, origin: str) -> Base:
    sha = data["sha256"].lower()
    if not SHA256_RE.fullmatch(sha):
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
                tuple(data["components"]), data["keyring"],
                _distro_config(data["distro_config"], origin))


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


def fetch_deb(b: Base, dest: Path, spec: str | None = None) -> Path:
    """A package of b's suite (spec, apt's package[:arch]=version; default
    the base's source package), into dest, with the base's private apt
    configuration: apt-get update, then apt-get download spec. Its lists
    index every arch the profiles name: arm64's linux-config on an amd64 host."""
    spec = spec or f"{b.package}={b.version}"
    if not Path(b.keyring).exists():
        raise LabError(f"base {b.name}: the keyring {b.keyring} that signs {b.where} is "
                       f"missing (apt: debian-archive-keyring)")
    options = apt.prepare(apt.root(b.name), b.sources_line,
                          sorted({profile.load(a).debian_arch for a in profile.arches()}))
    say(f"base {b.name}: fetching {spec} from {b.where} (apt, "
        f"configuration in {apt.root(b.name)})")
    try:
        apt.update(options, b.where)
    except LabError as e:
        raise LabError(f"base {b.name}: {e}") from e
    try:
        return apt.download(spec, dest, options, b.where)
    except LabError as e:
        if any(w in str(e) for w in NOT_THERE):
            raise LabError(f"{e} (the suite no longer has it? bump bases/{b.name}.toml, or "
                           f"point its uri at snapshot.debian.org, or set BASE_TARBALL)") from e
        raise


def verified_member(b: Base, spec: str, member: str, sha256: str, cached: Path) -> Path:
    """cached: the file member of spec's package from b's suite, whose
    sha256 must be sha256; fetched when the cache has no such file, and
    kept there only once checked."""
    if cached.exists():
        got = sha256_of(cached)
        if got == sha256:
            return cached
        say(f"base: cached {cached} has sha256 {got}, expected {sha256}; fetching again")
        cached.unlink()
    with tempfile.TemporaryDirectory(dir=_mkdir(paths.CACHE)) as tmp:
        deb = fetch_deb(b, Path(tmp), spec)
        part = Path(tmp) / "member"
        apt.deb_member(deb, member, part)
        got = sha256_of(part)
        if got != sha256:
            raise LabError(f"base: sha256 mismatch for {Path(member).name} from {deb.name}: "
                           f"expected {sha256}, got {got}")
        part.rename(cached)
    return cached


def distro_config(debian_arch: str, b: Base | None = None) -> Path:
    """Debian's generic kernel config of debian_arch for the base (its
    config_name(), xz-compressed as shipped), checked by the sha256 of
    bases/<base>.toml [distro_config]."""
    b = b or load()
    dc, origin = b.distro_config, f"bases/{b.name}.toml"
    if dc is None:
        raise LabError(f"{origin} has no [distro_config] (package, version and sha256 per "
                       f"arch of Debian's linux-config package of the base)")
    sha = dict(dc.sha256).get(debian_arch)
    if not sha:
        raise LabError(f"{origin}: [distro_config] has no sha256 for {debian_arch} "
                       f"({config_name(debian_arch)} of {dc.package} {dc.version})")
    try:
        return verified_member(b, dc.spec(debian_arch), dc.member(debian_arch), sha,
                               paths.CACHE / f"{dc.package}_{dc.version}_{config_name(debian_arch)}")
    except apt.MissingMember as e:
        mine = [n for n in e.present if (parse_config_name(n) or ("",))[0] == debian_arch]
        raise LabError(f"{e}: Debian's generic {debian_arch} config is missing; the package's "
                       f"{debian_arch} configs: {', '.join(mine) or 'none'}") from e


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
    return verified_member(b, f"{b.package}={b.version}", f"usr/src/{b.tarball_name}",
                           b.sha256, paths.CACHE / f"{b.package}_{b.version}.tar.xz")


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
