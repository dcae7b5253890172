"""Bench kernels besides vanilla and patched: bench/<base>/variants.toml, and their trees.

A variant is the base plus patches, given one of two ways:
- `upto = "<topic>/<patch file>"`: the series through that patch, for numbers
  per patch step (a cover letter's table: vanilla, the series up to the
  patch that matters, the whole series); `upto = "series"` is all of it;
- `patches = ["<dir>/<file>.patch", ...]`, under bench/<base>/before/: bench-only
  patches that put 6.12 back as it was before an optimization the base
  already has, to measure what that optimization changed. They are never in
  patches/<base>/series, never mailed.
With `upto`, `breaks = ["<file>.patch", ...]` under bench/<base>/broken/ goes on
top: a kernel with one behaviour broken on purpose, on which the test that
guards that behaviour must fail (`make run VARIANT=<name> TEST=..`): how a
test is shown to fail when its behaviour breaks, not only when it vanishes.

Its source tree, build/<base>/variants/<name>/, is a clone of build/<base>/linux's base
commit (objects hard-linked) with the patches applied by git am, as make
tree applies the series (tree.apply_patches). It is made again only when
its inputs change (the base commit, each patch's text and topic): a stamp
in its .git holds their hash, written once every patch applied, so a tree
that a failed run left half-applied is never taken as good. Its kernels
build as any other (lab/kernel.py): the object directory inside that tree,
so that ccache shares every object the variant does not change.
"""
import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, paths, series, tree
from lab.datafile import Key
from lab.progress import LabError, exclusive, say

BENCH = paths.BENCH
FILE_NAME = "variants.toml"
BEFORE = "before"                     # bench/<base>/before/: the bench-only patches
BROKEN = "broken"                     # bench/<base>/broken/: kernels a test must fail on
WHOLE_SERIES = "series"               # upto: every patch of patches/<base>/series
# lab/kernel.py's own variants (VARIANTS and CHECK): no declared variant
# may take their names.
RESERVED = ("vanilla", "patched", "check")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
STAMP = "lab-variant-inputs"          # in the tree's .git: the hash of what made it

VARIANT = datafile.Table({"name": Key(str), "why": Key(str), "upto": Key(str, ""),
                          "patches": Key([str], []), "breaks": Key([str], [])})
FILE = datafile.Table({"variant": Key([VARIANT], [])})


@dataclass(frozen=True)
class Variant:
    name: str
    why: str
    # (patch file, topic) in the order git am takes them; the topic becomes
    # the commit's Topic: trailer, as in build/<base>/linux ("" for bench-only ones).
    patches: tuple[tuple[Path, str], ...]


def _upto(upto: str, where: str, patches_dir: Path) -> tuple[tuple[Path, str], ...]:
    entries = series.load(patches_dir)
    paths_ = [e.path for e in entries]
    if upto == WHOLE_SERIES:
        return tuple((patches_dir / e.path, e.topic) for e in entries)
    if upto in paths_:
        return tuple((patches_dir / e.path, e.topic) for e in entries[:paths_.index(upto) + 1])
    topic = upto.split("/", 1)[0]
    mine = [p for p in paths_ if p.split("/", 1)[0] == topic]
    if mine:
        listed = "; its patches: " + ", ".join(p.split("/", 1)[1] for p in mine)
    else:
        listed = ("; no topic " + repr(topic) + " there, its topics: "
                  + ", ".join(dict.fromkeys(p.split("/", 1)[0] for p in paths_)))
    raise LabError(f"{where}: upto {upto!r} is not in {datafile.origin(patches_dir / 'series')}"
                   + listed)


def _files(names: list[str], key: str, where: str, folder: Path
           ) -> tuple[tuple[Path, str], ...]:
    out = []
    for n in names:
        f = folder / n
        if Path(n).is_absolute() or ".." in Path(n).parts or not f.is_file():
            raise LabError(f"{where}: {key}: {datafile.origin(f)} is not a file under "
                           f"{datafile.origin(folder)}/")
        out.append((f, ""))
    return tuple(out)


def _check_name(name: str, where: str, configs: Path) -> None:
    """A variant's kernels are named build/<base>/<arch>-<name>[-debug][-<config>]
    (kernel.Build.name): a name that a built-in variant's kernel could also
    take would mix their objects."""
    if not NAME_RE.match(name):
        raise LabError(f"{where}: a name is lower case letters, digits, '.', '_' and '-'")
    if name in RESERVED or name.startswith(tuple(f"{r}-" for r in RESERVED)):
        raise LabError(f"{where}: {', '.join(RESERVED)} are the built-in kernels: "
                       "another name, not one of them or starting with one")
    fragments = sorted(f.stem for f in configs.glob("*.config"))
    clash = [f for f in fragments + ["debug"] if name.endswith(f"-{f}")]
    if clash:
        raise LabError(f"{where}: a name ending in -{clash[0]} would name the {clash[0]} "
                       "build of another kernel")


def parse(text: str, origin: str, patches_dir: Path = paths.PATCHES,
          before_dir: Path = BENCH / BEFORE, configs: Path = paths.CONFIGS,
          broken_dir: Path = BENCH / BROKEN) -> dict[str, Variant]:
    data = datafile.parse(text, FILE, origin)
    out: dict[str, Variant] = {}
    for i, v in enumerate(data["variant"], 1):
        where = f"{origin}: {datafile.label('variant', v, i)}"
        _check_name(v["name"], where, configs)
        if v["name"] in out:
            raise LabError(f"{where}: the name is given twice")
        if not v["why"].strip():
            raise LabError(f"{where}: 'why' is empty: say what the variant measures")
        if bool(v["upto"]) == bool(v["patches"]):
            raise LabError(f"{where}: give exactly one of 'upto' (the series through one of "
                           f"its patches) and 'patches' (files under "
                           f"{datafile.origin(before_dir)}/)")
        if v["breaks"] and not v["upto"]:
            raise LabError(f"{where}: 'breaks' goes on top of 'upto' (e.g. upto = "
                           f"{WHOLE_SERIES!r}, the whole series)")
        patches = (_upto(v["upto"], where, patches_dir)
                   + _files(v["breaks"], "breaks", where, broken_dir) if v["upto"]
                   else _files(v["patches"], "patches", where, before_dir))
        out[v["name"]] = Variant(v["name"], v["why"].strip(), patches)
    return out


def load(bench: Path = BENCH, patches_dir: Path | None = None,
         configs: Path = paths.CONFIGS) -> dict[str, Variant]:
    """The variants of bench/<base>/variants.toml (none without the file), upto
    resolved against patches_dir's series (patches/)."""
    f = bench / FILE_NAME
    if not f.exists():
        return {}
    return parse(f.read_text(), datafile.origin(f), patches_dir or paths.PATCHES,
                 bench / BEFORE, configs, bench / BROKEN)


def get(name: str) -> Variant:
    known = load()
    if name not in known:
        raise LabError(f"unknown kernel variant {name!r}: vanilla, patched, or one of "
                       f"{datafile.origin(BENCH / FILE_NAME)}: "
                       f"{', '.join(known) or '(none declared)'}")
    return known[name]


def tree_of(name: str) -> Path:
    return paths.BASE_BUILD / "variants" / name


def inputs_key(v: Variant, base_commit: str) -> str:
    """What the tree is made of: the base commit, then each patch's text and
    topic in order (not its file name: a rename changes no commit)."""
    h = hashlib.sha256(f"base\0{base_commit}\0".encode())
    for f, topic in v.patches:
        h.update(f"{topic}\0{f.read_text()}\0".encode())
    return h.hexdigest()


def ensure(v: Variant, source: Path | None = None) -> Path:
    """v's tree, build/<base>/variants/<name>, made from the base of source
    (build/<base>/linux) unless it was made whole from the same inputs."""
    source = source or paths.TREE
    dest = tree_of(v.name)
    if not (source / ".git").exists():
        raise LabError(f"{source} does not exist: run `make tree` first")
    with exclusive(paths.BASE_BUILD / "locks" / f"variant-{v.name}.lock", f"variant {v.name}"):
        base = tree.git(source, "rev-parse", f"{tree.BASE_TAG}^{{commit}}").strip()
        want = inputs_key(v, base)
        stamp = dest / ".git" / STAMP
        if stamp.is_file() and stamp.read_text().strip() == want:
            return dest
        have = (tree.git(dest, "rev-parse", f"{tree.BASE_TAG}^{{commit}}", check=False).strip()
                if (dest / ".git").is_dir() else "")
        if have != base and dest.exists():
            say(f"variant {v.name}: {dest} is not on the base of {source}: making it again")
            shutil.rmtree(dest)
        if not dest.exists():
            say(f"variant {v.name}: cloning the base of {source} into {dest}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            tree.clone_base(source, dest, tree.tree_base_label(source))
        stamp.unlink(missing_ok=True)
        say(f"variant {v.name}: git am of {len(v.patches)} patch(es) onto the base")
        try:
            tree.apply_patches(dest, list(v.patches), branch="variant")
        except LabError as e:
            raise LabError(f"variant {v.name}: {e}") from e
        stamp.write_text(want + "\n")
    return dest
