"""Benchmark scenarios, as data (bench/<topic>.toml), and their parsing.

A scenario is: an arch, the two sides it compares (the vanilla and patched
kernels by default, or two kernel command lines such as TDP and shadow MMU),
a selftest command, the metric lines to read out of its output (a regex whose
first group is the value, and a unit), how many repeats, and the seed's
published figure beside it. Adding a scenario needs no code.

A scenario's clock says what its times count in QEMU. "host": the guest's
clock follows the host's, so a time is emulation speed, shared with whatever
else the host runs (noisy). "icount": QEMU runs with -icount, where guest time
advances by the instructions the emulated CPU executes (1 ns each, idle time
skipped), and QEMU's PMU counts retired instructions exactly, so a perf
instruction counter of one thread (dirty_log_perf_test prints them) is a
count of emulated work, repeatable whatever the host's load, not a time on
any real CPU.

A scenario may also build both kernels with bench-only fragments of configs/
(`config`, e.g. lock-stat for /proc/lock_stat), and run guest shell lines
`before` and `after` its command, whose output the metric regexes read too
(clear /proc/lock_stat before, print the mmu_lock lines after): counts of
what the kernel did, which emulation's timing noise does not blur as it
blurs times.
"""
import re
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, paths
from lab.datafile import Key
from lab.progress import LabError

LEVELS = ("quick", "default", "full")   # each level runs its scenarios and the smaller levels'
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "count": 1.0}   # count: not a time


@dataclass(frozen=True)
class Clock:
    qemu_args: tuple[str, ...]
    smp: int | None = None      # vCPUs, in place of the arch profile's


# shift=0: 1 ns per instruction; sleep=off: an idle guest's time jumps to its
# next timer instead of following the host. One vCPU: QEMU keeps one
# instruction count for all vCPUs, which run in turn, and its PMU's
# instruction counter reads that count; with one vCPU a perf counter of a
# thread counts that thread's instructions alone.
CLOCKS = {"host": Clock(()), "icount": Clock(("-icount", "shift=0,sleep=off"), smp=1)}


@dataclass(frozen=True)
class Metric:
    name: str
    regex: re.Pattern
    unit: str


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a kernel variant booted with a command line."""
    label: str
    variant: str       # "vanilla" or "patched"
    cmdline: str


@dataclass(frozen=True)
class Scenario:
    topic: str
    name: str
    arch: str
    command: str
    metrics: tuple[Metric, ...]
    repeats: int
    group_by: re.Pattern | None     # a line that starts a sub-case (e.g. guest mode)
    seed: str                       # the published figure, with where it comes from
    timeout: int
    level: str                      # smallest BENCH level that runs it
    sides: tuple[Side, Side]        # baseline first
    clock: str = "host"             # a key of CLOCKS
    config: tuple[str, ...] = ()    # fragments of configs/ both kernels add
    before: str = ""                # guest shell lines around the command
    after: str = ""
    cpu: str = ""                   # QEMU's -cpu, in place of the arch profile's

    @property
    def key(self) -> str:
        return f"{self.topic}/{self.name}"

    @property
    def labels(self) -> tuple[str, str]:
        return self.sides[0].label, self.sides[1].label


VARIANTS = ("vanilla", "patched")

SIDE = datafile.Table({"label": Key(str), "kernel": Key(str, "patched", choices=VARIANTS),
                       "cmdline": Key(str, "")})
METRIC = datafile.Table({"name": Key(str), "regex": Key(str),
                         "unit": Key(str, "s", choices=tuple(UNITS))})
SCENARIO = datafile.Table({
    "name": Key(str), "arch": Key(str), "command": Key(str), "metrics": Key([METRIC]),
    "repeats": Key(int, 5), "group_by": Key(str, ""), "seed": Key(str, ""),
    "timeout": Key(int, 300), "level": Key(str, "default", choices=LEVELS),
    "clock": Key(str, "host", choices=tuple(CLOCKS)), "cmdline": Key(str, ""),
    "a": Key(SIDE, None), "b": Key(SIDE, None), "config": Key((str, [str]), []),
    "before": Key(str, ""), "after": Key(str, ""), "cpu": Key(str, "")})
# [defaults] holds keys of [[scenario]], checked when merged into each.
FILE = datafile.Table({"topic": Key(str, ""), "defaults": Key(dict, {}),
                       "scenario": Key([dict], [])})


def _sides(s: dict, origin: str) -> tuple[Side, Side]:
    """Vanilla against patched kernel by default; or two [scenario.a] and
    [scenario.b] tables (label, kernel, cmdline added to the scenario's), to
    compare e.g. TDP MMU and shadow MMU on one kernel."""
    cmdline = s["cmdline"]
    if s["a"] is None and s["b"] is None:
        return Side("vanilla", "vanilla", cmdline), Side("patched", "patched", cmdline)
    if s["a"] is None or s["b"] is None:
        raise LabError(f"{origin}: {s['name']}: a and b name the two sides: give both")
    sides = [Side(side["label"], side["kernel"], f"{cmdline} {side['cmdline']}".strip())
             for side in (s["a"], s["b"])]
    if sides[0].label == sides[1].label:
        raise LabError(f"{origin}: {s['name']}: the two sides need different labels")
    if (sides[0].variant, sides[0].cmdline) == (sides[1].variant, sides[1].cmdline):
        raise LabError(f"{origin}: {s['name']}: both sides boot the same kernel with the "
                       "same command line")
    return sides[0], sides[1]


def _config(s: dict, origin: str, configs: Path) -> tuple[str, ...]:
    names = s["config"]
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        if not (re.fullmatch(r"[a-z0-9][a-z0-9_-]*", n) and (configs / f"{n}.config").is_file()):
            raise LabError(f"{origin}: {s['name']}: config {n!r} names no fragment "
                           f"{configs}/<name>.config")
    return tuple(names)


def parse(text: str, origin: str, configs: Path = paths.CONFIGS) -> list[Scenario]:
    data = datafile.parse(text, FILE, origin)
    topic = data["topic"] or Path(origin).stem
    datafile.check(data["defaults"], SCENARIO, origin, "[defaults]", partial=True)
    out = []
    for i, raw in enumerate(data["scenario"], 1):
        s = datafile.check(data["defaults"] | raw, SCENARIO, origin,
                           datafile.label("scenario", raw, i))
        metrics = []
        for m in s["metrics"]:
            try:
                rx = re.compile(m["regex"])
            except re.error as e:
                raise LabError(f"{origin}: {s['name']}: bad regex {m['regex']!r}: {e}") from e
            if rx.groups < 1:
                raise LabError(f"{origin}: {s['name']}: regex {m['regex']!r} captures no value")
            metrics.append(Metric(m["name"], rx, m["unit"]))
        group = re.compile(s["group_by"]) if s["group_by"] else None
        out.append(Scenario(topic, s["name"], s["arch"], s["command"], tuple(metrics),
                            s["repeats"], group, s["seed"], s["timeout"], s["level"],
                            _sides(s, origin), s["clock"], _config(s, origin, configs),
                            s["before"].strip(), s["after"].strip(), s["cpu"]))
    names = [sc.name for sc in out]
    if len(set(names)) != len(names):
        raise LabError(f"{origin}: scenario names repeat")
    return out


def load_all(directory: Path = paths.ROOT / "bench", configs: Path = paths.CONFIGS
             ) -> list[Scenario]:
    out = []
    for f in sorted(directory.glob("*.toml")):
        out += parse(f.read_text(), datafile.origin(f), configs)
    return out


def select(all_: list[Scenario], names: list[str] | None, level: str = "full") -> list[Scenario]:
    if names:
        known = {s.key: s for s in all_} | {s.name: s for s in all_}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise LabError(f"unknown scenario(s) {', '.join(unknown)}; known: "
                           + ", ".join(sorted(s.key for s in all_)))
        return [known[n] for n in names]
    return [s for s in all_ if LEVELS.index(s.level) <= LEVELS.index(level)]


def read_metrics(sc: Scenario, lines: list[str]) -> dict[tuple[str, str], list[float]]:
    """(metric name, group) -> values in seconds, from one run's output.

    group is the text of the last group_by line seen ("" without group_by):
    dirty_log_perf_test, for one, repeats its figures for every guest mode.
    """
    values: dict[tuple[str, str], list[float]] = {}
    group = ""
    for line in lines:
        line = line.strip().removeprefix("# ")
        if sc.group_by:
            g = sc.group_by.search(line)
            if g:
                group = (g.group(1) if g.groups() else g.group(0)).strip()
                continue
        for m in sc.metrics:
            hit = m.regex.search(line)
            if hit:
                values.setdefault((m.name, group), []).append(float(hit.group(1)) * UNITS[m.unit])
    return values
