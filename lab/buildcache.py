"""make test's kernel and selftests builds, kept by what they are built from.

A fresh clone has a fresh build/ and rebuilt every kernel and selftests
install that an earlier clone had built from the same sources: ccache kept
each to a minute or so, but with two bases the four kernels and four
selftests builds took 4.3 of the 18.9 min of a warm CI run (2026-11-24).
An entry is keyed, as make check's per-patch builds are (check.build_key),
by everything the build reads: the tree's git tree id (its content, not its
history), the config fragments, the compilers and C library, and the
harness code that runs the build. A kernel's tree is first brought to
what it builds (kernel.prepare_source: the vanilla worktree, a bench
variant's tree), so make bench's kernels (vanilla, the variants, lock-stat)
come back to a fresh clone too; a selftests install is kept only from the
series' tree. A tree with uncommitted or untracked work has no tree id and
is never kept; make check's worktree keys its builds itself. REBUILD=1
(LAB_REBUILD) builds again and keeps the new build.
"""
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from lab import check, kernel, paths, selftests
from lab.kernel import Build
from lab.progress import exclusive, say

# Entries kept of each kind, the most recently used: a kernel is ~20 MiB,
# a selftests install 50-160 MiB; per base make test's 4 kernels and
# make bench's 9, the broken kernels of the tests' failure checks.
KEEP = {"kernel": 40, "selftests": 8}
CODE = [paths.ROOT / "lab" / f for f in ("kernel.py", "selftests.py", "buildcache.py")]


def root() -> Path:
    return paths.CACHE / "builds"


def clean_tree_id(src: Path) -> str | None:
    """src's tree id, when src is a git tree with nothing uncommitted or
    untracked (what is built is then exactly that tree); else None."""
    if not (src / ".git").exists():
        return None
    status = subprocess.run(["git", "-C", str(src), "status", "--porcelain"],
                            capture_output=True, text=True)
    if status.returncode != 0 or status.stdout.strip():
        return None
    return subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD^{tree}"],
                          capture_output=True, text=True, check=True).stdout.strip()


def key_of(kind: str, inputs: list[tuple[str, str]]) -> str:
    h = hashlib.sha256(kind.encode() + b"\0")
    for name, text in inputs:
        h.update(f"{name}\0{text}\0".encode())
    return h.hexdigest()


def _inputs(b: Build, kind: str) -> list[tuple[str, str]] | None:
    """What b's kernel (kind) or selftests are built from, or None when
    they are not kept (see the module's comment); a kernel's tree prepared
    first (kernel.prepare_source)."""
    # Debian's config (a distro or make deb build) is no input keyed here.
    if os.environ.get("LAB_REBUILD") or b.variant == kernel.CHECK or b.distro or b.deb:
        return None
    if kind == "selftests" and b.variant != "patched":
        return None
    tree_id = clean_tree_id(b.src)
    if tree_id is None:
        return None
    return ([("tree", tree_id), ("name", b.name), ("target", b.profile.target),
             ("make_arch", b.profile.make_arch), ("cross", b.profile.cross_compile),
             ("toolchain", check.toolchain(b.profile.cross_compile)),
             ("host", check.toolchain(""))]
            + [(f"fragment {f.name}", f.read_text()) for f in b.fragments()]
            + [(f.name, f.read_text()) for f in CODE])


def lookup(key: str) -> Path | None:
    entry = root() / key
    meta = entry / "meta.json"
    if not meta.is_file():
        return None
    meta.touch()           # most recently used: kept longest
    return entry


def built_when(entry: Path) -> str:
    try:
        return json.loads((entry / "meta.json").read_text())["when"]
    except (OSError, ValueError, KeyError):
        return "earlier"


def store(kind: str, key: str, files: dict[str, Path], what: str) -> None:
    """Keep files (name in the entry -> file or directory) under key, whole
    or not at all: copied aside, then renamed into place."""
    dest = root() / key
    tmp = root() / f".tmp-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for name, src in files.items():
            if src.is_dir():
                shutil.copytree(src, tmp / name, symlinks=True)
            else:
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, tmp / name)
        (tmp / "meta.json").write_text(json.dumps(
            {"kind": kind, "what": what, "when": time.strftime("%Y-%m-%d %H:%M %Z")}) + "\n")
        if dest.exists():     # another run kept the same build meanwhile
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    evict(kind)


def evict(kind: str, keep: int | None = None) -> None:
    keep = KEEP[kind] if keep is None else keep
    entries = []
    for meta in root().glob("*/meta.json"):
        try:
            if json.loads(meta.read_text()).get("kind") == kind:
                entries.append((meta.stat().st_mtime, meta.parent))
        except (OSError, ValueError):
            continue
    for _, entry in sorted(entries, reverse=True)[keep:]:
        shutil.rmtree(entry, ignore_errors=True)


def _put(src: Path, dest: Path) -> None:
    """dest replaced by a copy of src (file or directory)."""
    if dest.is_dir() and not dest.is_symlink():
        shutil.rmtree(dest)
    elif dest.exists() or dest.is_symlink():
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)
    else:
        shutil.copy2(src, dest)


REUSED = "(same tree, config fragments, compilers and harness; REBUILD=1 builds it again)"


def build_kernel(b: Build) -> Path:
    """kernel.build(b), or the kept image, .config and UAPI headers of the
    same build."""
    kernel.prepare_source(b)
    inputs = _inputs(b, "kernel")
    key = key_of("kernel", inputs) if inputs else None
    entry = lookup(key) if key else None
    if entry:
        with exclusive(b.lock, f"kernel {b.name}"):
            for name, dest in (("config", b.out / ".config"), ("image", b.image),
                               ("headers", b.headers)):
                _put(entry / name, dest)
            kernel.link(b)
        say(f"kernel {b.name}: as built {built_when(entry)} {REUSED} -> {b.link / b.profile.image}")
        return b.image
    image = kernel.build(b)
    # Kept only if the tree did not change while it built.
    if inputs and _inputs(b, "kernel") == inputs:
        store("kernel", key, {"config": b.out / ".config", "image": image, "headers": b.headers},
              b.name)
    return image


def build_selftests(b: Build, src: Path | None = None) -> Path:
    """selftests.build(b), or the kept install of the same build (not for
    another tree's selftests, src)."""
    inputs = _inputs(b, "selftests") if src is None else None
    key = key_of("selftests", inputs) if inputs else None
    entry = lookup(key) if key else None
    dest = selftests.install_dir(b)
    if entry:
        with exclusive(b.lock, f"selftests {b.name}"):
            _put(entry / "install", dest)
        say(f"selftests {b.name}: as built {built_when(entry)} {REUSED} -> {dest}")
        return dest
    install = selftests.build(b, src=src)
    if inputs and _inputs(b, "selftests") == inputs:
        store("selftests", key, {"install": install}, b.name)
    return install
