"""The base: Debian's linux-source package, pinned by version and sha256.

base.toml names the package, version and the sha256 of the tarball it ships.
Users with their own source can override it with LAB_BASE_TARBALL (a kernel
tarball) or LAB_BASE_TREE (an extracted kernel tree); those are used as given.
"""
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, paths
from lab.datafile import Key, Table
from lab.progress import LabError, say


@dataclass(frozen=True)
class Base:
    package: str
    version: str
    sha256: str

    @property
    def tarball_name(self) -> str:
        # linux-source-6.12 ships usr/src/linux-source-6.12.tar.xz
        return f"{self.package}.tar.xz"

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"


FILE = Table({"package": Key(str), "version": Key(str), "sha256": Key(str)})
CONF = paths.ROOT / "base.toml"


def _base(data: dict, origin: str) -> Base:
    sha = data["sha256"].lower()
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise LabError(f"{origin}: 'sha256' must be 64 hex digits, not {data['sha256']!r}")
    return Base(data["package"], data["version"], sha)


def parse(text: str, origin: str = "base.toml") -> Base:
    return _base(datafile.parse(text, FILE, origin), origin)


def load(conf: Path = CONF) -> Base:
    return _base(datafile.read(conf, FILE), datafile.origin(conf))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def apt_download(spec: str, dest: Path) -> Path:
    """apt-get download spec into dest; one-line LabError on any failure."""
    if not shutil.which("apt-get"):
        raise LabError(f"cannot fetch {spec}: apt-get not found (set LAB_BASE_TARBALL to use a local tarball)")
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["apt-get", "download", spec], cwd=dest, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errs = [ln for ln in lines if ln.startswith("E:")] or lines[-1:] or ["no output"]
        raise LabError(f"apt-get download {spec} failed: {errs[-1]}")
    debs = sorted(dest.glob("*.deb"))
    if not debs:
        raise LabError(f"apt-get download {spec} succeeded but left no .deb in {dest}")
    return debs[-1]


def deb_member(deb: Path, member: str, dest: Path) -> Path:
    """Extract one file of a .deb (dpkg-deb -x into a scratch dir)."""
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        src = Path(tmp) / member
        if not src.exists():
            raise LabError(f"{deb.name} has no {member}")
        shutil.move(src, dest)
    return dest


def tarball(base: Base | None = None) -> Path:
    """Path to the verified base tarball, downloading it with apt if needed."""
    override = os.environ.get("LAB_BASE_TARBALL")
    if override:
        p = Path(override).resolve()
        if not p.is_file():
            raise LabError(f"LAB_BASE_TARBALL={override}: no such file")
        say(f"base: using {p} (override, sha256 {sha256_of(p)[:16]}..., not checked against base.toml)")
        return p
    base = base or load()
    cached = paths.CACHE / f"{base.package}_{base.version}.tar.xz"
    if cached.exists():
        got = sha256_of(cached)
        if got == base.sha256:
            return cached
        say(f"base: cached {cached} has sha256 {got}, expected {base.sha256}; fetching again")
        cached.unlink()
    say(f"base: fetching {base.package}={base.version} with apt-get")
    with tempfile.TemporaryDirectory(dir=_mkdir(paths.CACHE)) as tmp:
        deb = apt_download(f"{base.package}={base.version}", Path(tmp))
        part = Path(tmp) / "tarball"
        deb_member(deb, f"usr/src/{base.tarball_name}", part)
        got = sha256_of(part)
        if got != base.sha256:
            raise LabError(f"base: sha256 mismatch for {base.tarball_name} from {deb.name}: "
                           f"expected {base.sha256}, got {got}")
        part.rename(cached)
    return cached


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def source() -> tuple[Path, str]:
    """(the kernel source make tree imports, its label): LAB_BASE_TREE, or
    LAB_BASE_TARBALL, or base.toml's package."""
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
