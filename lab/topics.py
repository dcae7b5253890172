"""python3 -m lab topics: which bases carry each topic, and what its versions share.

Each base has its own series and topic folders (patches/<base>/series,
patches/<base>/<topic>/): a backport on 6.12 and the upstream submission on
7.3 are different files. For a topic that several bases carry, each patch
of each version is matched against the other bases' versions:
- "same change": a patch there whose `git patch-id --stable` is the same
  (the same diff, whatever the line numbers of its hunks);
- "ported": a patch there with the same subject (the change made again
  for that base);
- "ported, retitled": a patch there that patches/topics.toml pairs with it
  (`[[port]]`, below): the change made again under another subject;
- "none": none of these.
patches/topics.toml says why a topic is carried on one base only
(`[[topic]] name, why`, e.g. "upstream since 6.15: commit ..."); an entry
for a topic no base carries, or that several carry, is a mistake. Its
`[[port]]` entries pair a patch retitled in its port: `topic`, and the
subject of the patch in each base, keyed by the base's name
("6.12" = "KVM: ...", "7.3" = "KVM: ..."). A subject no patch of that
topic in that base's series has, or one of a pair the subjects already
make, is a mistake.
"""
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lab import datafile, series
from lab.datafile import Key, Table
from lab.progress import LabError

FILE_NAME = "topics.toml"
SAME, PORTED, RETITLED, NONE = "same change", "ported", "ported, retitled", "none"

TOPIC = Table({"name": Key(str), "why": Key(str)})


def file_table(bases: list[str]) -> Table:
    """topics.toml's tables; a [[port]] has a key per base."""
    port = Table({"topic": Key(str), **{b: Key(str, "") for b in bases}}, label_key="topic")
    return Table({"topic": Key([TOPIC], []), "port": Key([port], [])})


@dataclass(frozen=True)
class Port:
    """A patch retitled between bases: its subject in each base named."""
    topic: str
    subjects: dict          # base -> subject
    label: str              # as messages name the entry: [[port]] 'topic'


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
    # (base, subject) -> the number of the [[port]] that pairs it
    ports: dict = field(default_factory=dict)

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


def match(p: Patch, others: list[Patch], ports: dict | None = None) -> tuple[str, Patch | None]:
    """What another base's version of the topic has of p (ports: Topic.ports)."""
    same = next((o for o in others if p.patch_id and o.patch_id == p.patch_id), None)
    if same:
        return SAME, same
    ported = next((o for o in others if o.subject == p.subject), None)
    if ported:
        return PORTED, ported
    mine = (ports or {}).get((p.base, p.subject))
    paired = next((o for o in others if mine is not None
                   and ports.get((o.base, o.subject)) == mine), None)
    return (RETITLED, paired) if paired else (NONE, None)


def parse(text: str, origin: str, bases: list[str]) -> tuple[dict[str, str], list[Port]]:
    """topics.toml: {topic: why} of the one-base topics, and the [[port]]s."""
    data = datafile.parse(text, file_table(bases), origin)
    why = {}
    for i, t in enumerate(data["topic"], 1):
        if t["name"] in why:
            raise LabError(f"{origin}: {datafile.label('topic', t, i)}: named twice")
        if not t["why"].strip():
            raise LabError(f"{origin}: {datafile.label('topic', t, i)}: 'why' is empty")
        why[t["name"]] = " ".join(t["why"].split())
    ports = []
    for i, e in enumerate(data["port"], 1):
        label = datafile.label("port", e, i, "topic")
        subjects = {b: " ".join(e[b].split()) for b in bases if e[b].strip()}
        if len(subjects) < 2:
            raise LabError(f"{origin}: {label}: names the subject of {len(subjects)} base(s); "
                           f"a port pairs the subjects of two or more "
                           f"({', '.join(repr(b) for b in bases)} = \"<subject>\")")
        if len(set(subjects.values())) == 1:
            raise LabError(f"{origin}: {label}: the subjects are the same, which pairs the "
                           "patches without an entry: remove it")
        ports.append(Port(e["topic"], subjects, label))
    return why, ports


def _pair(topics: dict[str, "Topic"], ports: list[Port], by_base: dict[str, list[Patch]],
          origin: str, series_files: dict[str, str]) -> None:
    """Each [[port]]'s patches, found in the topic's version of each base."""
    for n, port in enumerate(ports):
        t = topics.get(port.topic)
        for base, subject in port.subjects.items():
            where = series_files.get(base, f"patches/{base}/series")
            if t is None or base not in t.patches:
                raise LabError(f"{origin}: {port.label}: {where} has no topic {port.topic!r}")
            if not any(p.subject == subject for p in t.patches[base]):
                elsewhere = [p.path for p in by_base[base] if p.subject == subject]
                raise LabError(
                    f"{origin}: {port.label}: no patch of {port.topic!r} in {where} has the "
                    f"subject {subject!r}" + (f" ({elsewhere[0]} has it, another topic)"
                                              if elsewhere else
                                              f"; its subjects: "
                                              f"{'; '.join(p.subject for p in t.patches[base])}"))
            if (base, subject) in t.ports:
                raise LabError(f"{origin}: {port.label}: {base}'s {subject!r} is paired twice")
            t.ports[(base, subject)] = n


def collect(by_base: dict[str, list[Patch]], why: dict[str, str],
            origin: str = FILE_NAME, ports: list[Port] = (),
            series_files: dict[str, str] | None = None) -> list[Topic]:
    """The topics in the order the bases' series first list them; each
    base's series file as messages name it in series_files."""
    topics: dict[str, Topic] = {}
    for base, patches in by_base.items():
        for p in patches:
            t = topics.setdefault(p.path.split("/", 1)[0], Topic(p.path.split("/", 1)[0]))
            t.patches.setdefault(base, []).append(p)
    _pair(topics, list(ports), by_base, origin, series_files or {})
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
    why, ports = parse(f.read_text(), datafile.origin(f), bases) if f.exists() else ({}, [])
    return collect({b: read_base(patches_root, b) for b in bases}, why, datafile.origin(f),
                   ports, {b: datafile.origin(patches_root / b / "series") for b in bases})


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
                    kind, o = match(p, theirs, t.ports)
                    if o:
                        shown.add((other, o.path))
                        cells.append(f"{other}: {kind}" + ("" if o.file == p.file
                                                           else f" ({o.file})"))
                    else:
                        cells.append(f"{other}: {kind}")
                out.append(f"  {b} {p.file}  {'; '.join(cells)}")
    return "\n".join(out) + "\n"
