"""python3 -m lab topics: which bases carry each topic, and what its versions share.

Each base has its own series and topic folders (patches/<base>/series,
patches/<base>/<topic>/): a backport on 6.12 and the upstream submission on
7.3 are different files. For a topic that several bases carry, each patch
of each version is matched against the other bases' versions:
- "same change": a patch there whose `git patch-id --stable` is the same
  (the same diff, whatever the line numbers of its hunks);
- "ported": a patch there with the same subject (the change made again
  for that base);
- "none": neither.
patches/topics.toml says why a topic is carried on one base only
(`[[topic]] name, why`, e.g. "upstream since 6.15: commit ..."); an entry
for a topic no base carries, or that several carry, is a mistake.
"""
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lab import datafile, series
from lab.datafile import Key, Table
from lab.progress import LabError

FILE_NAME = "topics.toml"
SAME, PORTED, NONE = "same change", "ported", "none"

TOPIC = Table({"name": Key(str), "why": Key(str)})
FILE = Table({"topic": Key([TOPIC], [])})


@dataclass(frozen=True)
class Patch:
    base: str
    path: str          # <topic>/<file>, as the series lists it
    subject: str
    patch_id: str      # git patch-id --stable; "" for a patch without a diff

    @property
    def file(self) -> str:
        return self.path.split("/", 1)[-1]


@dataclass
class Topic:
    name: str
    patches: dict = field(default_factory=dict)   # base -> [Patch], in series order
    why: str = ""                                 # topics.toml's, for a one-base topic

    @property
    def bases(self) -> list[str]:
        return list(self.patches)


def patch_id(text: str) -> str:
    proc = subprocess.run(["git", "patch-id", "--stable"], input=text, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise LabError(f"git patch-id failed: {proc.stderr.strip()}")
    return proc.stdout.split(" ", 1)[0] if proc.stdout.strip() else ""


def read_base(patches_root: Path, base: str) -> list[Patch]:
    d = patches_root / base
    return [Patch(base, e.path, series.subject((d / e.path).read_text()) or "",
                  patch_id((d / e.path).read_text())) for e in series.load(d)]


def match(p: Patch, others: list[Patch]) -> tuple[str, Patch | None]:
    """What another base's version of the topic has of p."""
    same = next((o for o in others if p.patch_id and o.patch_id == p.patch_id), None)
    if same:
        return SAME, same
    ported = next((o for o in others if o.subject == p.subject), None)
    return (PORTED, ported) if ported else (NONE, None)


def parse_why(text: str, origin: str) -> dict[str, str]:
    data = datafile.parse(text, FILE, origin)
    out = {}
    for i, t in enumerate(data["topic"], 1):
        if t["name"] in out:
            raise LabError(f"{origin}: {datafile.label('topic', t, i)}: named twice")
        if not t["why"].strip():
            raise LabError(f"{origin}: {datafile.label('topic', t, i)}: 'why' is empty")
        out[t["name"]] = " ".join(t["why"].split())
    return out


def collect(by_base: dict[str, list[Patch]], why: dict[str, str],
            origin: str = FILE_NAME) -> list[Topic]:
    """The topics in the order the bases' series first list them."""
    topics: dict[str, Topic] = {}
    for base, patches in by_base.items():
        for p in patches:
            t = topics.setdefault(p.path.split("/", 1)[0], Topic(p.path.split("/", 1)[0]))
            t.patches.setdefault(base, []).append(p)
    for name, text in why.items():
        if name not in topics:
            raise LabError(f"{origin}: [[topic]] {name!r}: no base carries it (patches/<base>/"
                           f"series); the topics: {', '.join(topics) or '(none)'}")
        if len(topics[name].bases) > 1:
            raise LabError(f"{origin}: [[topic]] {name!r}: carried on "
                           f"{', '.join(topics[name].bases)}, not on one base only: remove "
                           "the entry")
        topics[name].why = text
    return list(topics.values())


def compare(patches_root: Path, bases: list[str]) -> list[Topic]:
    f = patches_root / FILE_NAME
    why = parse_why(f.read_text(), datafile.origin(f)) if f.exists() else {}
    return collect({b: read_base(patches_root, b) for b in bases}, why, datafile.origin(f))


def render(topics: list[Topic]) -> str:
    if not topics:
        return "no topic in any base's series\n"
    out = []
    for t in topics:
        if len(t.bases) == 1:
            (b, ps), = t.patches.items()
            out.append(f"{t.name}: {b} only, {len(ps)} patch(es): "
                       + (t.why or f"(no reason in patches/{FILE_NAME})"))
            continue
        out.append(f"{t.name}: {', '.join(t.bases)}")
        shown = set()
        for b, ps in t.patches.items():
            for p in ps:
                if (b, p.path) in shown:
                    continue
                cells = []
                for other, theirs in t.patches.items():
                    if other == b:
                        continue
                    kind, o = match(p, theirs)
                    if o:
                        shown.add((other, o.path))
                        cells.append(f"{other}: {kind}" + ("" if o.file == p.file
                                                           else f" ({o.file})"))
                    else:
                        cells.append(f"{other}: {kind}")
                out.append(f"  {b} {p.file}  {'; '.join(cells)}")
    return "\n".join(out) + "\n"
