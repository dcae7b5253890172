"""Benchmark scenarios, as data (bench/<base>/<topic>.toml), and their parsing.

A scenario is: an arch, the sides it compares, a selftest command, the
metric lines to read out of its output (a regex whose first group is the
value, and a unit), how many repeats, and the seed's published figure beside
it. Adding a scenario needs no code.

Its sides are the vanilla and patched kernels by default, or a list, the
baseline first, each side a kernel (vanilla, patched or a variant of
bench/<base>/variants.toml: the series up to a patch, or 6.12 with bench-only
patches), a kernel command line added to the scenario's (TDP against shadow
MMU) and a command in place of the scenario's (the same ioctl with a
feature off: a floor). Every other side is compared with the baseline.

A scenario's clock says what its times count in QEMU. "host": the guest's
clock follows the host's, so a time is emulation speed, shared with whatever
else the host runs (noisy). "icount": QEMU runs with -icount, where guest time
advances by the instructions the emulated CPU executes (1 ns each, idle time
skipped), and QEMU's PMU counts retired instructions exactly, so a perf
instruction counter of one thread (dirty_log_perf_test prints them) is a
count of emulated work, repeatable whatever the host's load, not a time on
any real CPU.

A scenario may also build its kernels with bench-only fragments of configs/
(`config`, e.g. lock-stat for /proc/lock_stat), and run guest shell lines
`before` and `after` its command, whose output the metric regexes read too
(clear /proc/lock_stat before, print the mmu_lock lines after): counts of
what the kernel did, which emulation's timing noise does not blur as it
blurs times.

Levels (make bench BENCH=...): quick and default run only figures the
host's load does not move, counts and emulated time, so that a few boots a
side tell a change; a time on the host's clock needs five and the host to
itself, and runs in full. parse() refuses a quick or default scenario with a
host-clock time.
"""
import re
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, paths, variants
from lab.datafile import Key
from lab.progress import LabError

LEVELS = ("quick", "default", "full")   # each level runs its scenarios and the smaller levels'
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "count": 1.0}   # count: not a time

# What a metric's figure is, by its unit and its scenario's clock: what the
# report and the plot say it is, and what a level may run.
HOST_TIME = "host time"           # follows the host's clock: emulation speed, noisy
EMULATED_TIME = "emulated time"   # -icount: emulated instructions, 1 ns each
COUNT = "count"                   # KVM statistics, instructions, lock events, passes
# The levels below full: figures that repeat whatever else the host runs.
STEADY_KINDS = (EMULATED_TIME, COUNT)


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
    stat: str = ""      # a KVM binary stat of the phase's stats line (regex matches it)

    def value(self, hit: re.Match) -> float:
        """A stats line (memstress_stats_print: "<phase> stats: a=+1 b=-2
        c=3(peak)") names only the stats that changed: one it leaves out
        did not move, 0."""
        if not self.stat:
            return float(hit.group(1))
        got = re.search(rf"(?:^|\s){re.escape(self.stat)}=([+-]?\d+)", hit.group(1))
        return float(got.group(1)) if got else 0.0


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a kernel booted with a command line, running
    a selftest command."""
    label: str
    variant: str       # vanilla, patched, or a variant of bench/<base>/variants.toml
    cmdline: str       # the scenario's and the side's own
    command: str       # the side's own, or the scenario's


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
    sides: tuple[Side, ...]         # the baseline first, then what is compared with it
    clock: str = "host"             # a key of CLOCKS
    config: tuple[str, ...] = ()    # fragments of configs/ every side's kernel adds
    before: str = ""                # guest shell lines around the command
    after: str = ""
    cpu: str = ""                   # QEMU's -cpu, in place of the arch profile's
    # Its counts repeat exactly boot to boot (KVM's statistics of one vCPU
    # under -icount): a comparison of them is exact with one boot a side.
    exact_counts: bool = False

    @property
    def key(self) -> str:
        return f"{self.topic}/{self.name}"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.sides)

    def kind(self, metric: str) -> str:
        """HOST_TIME, EMULATED_TIME or COUNT: what metric's figure is."""
        unit = next((m.unit for m in self.metrics if m.name == metric), "s")
        if unit == "count":
            return COUNT
        return EMULATED_TIME if self.clock == "icount" else HOST_TIME

    def exact(self, metric: str) -> bool:
        """Whether the scenario declares metric's values exact."""
        return self.exact_counts and self.kind(metric) == COUNT


KERNELS = ("vanilla", "patched")    # a side's kernel besides the declared variants
# A run's results.json keeps each cell's values under its sides' labels,
# beside these keys.
CELL_KEYS = ("metric", "group")


def _side_table(kernels: tuple[str, ...]) -> datafile.Table:
    return datafile.Table({"label": Key(str), "kernel": Key(str, "patched", choices=kernels),
                           "cmdline": Key(str, ""), "command": Key(str, "")},
                          label_key="label")


# A metric reads its value with a regex (group 1), or names a phase and a
# KVM binary stat of that phase's stats line (dirty_log_perf_test -S,
# execute_perf_test -S): a count.
METRIC = datafile.Table({"name": Key(str), "regex": Key(str, ""),
                         "phase": Key(str, ""), "stat": Key(str, ""),
                         "unit": Key(str, "s", choices=tuple(UNITS))})


def _metric(m: dict, where: str) -> Metric:
    if bool(m["phase"]) != bool(m["stat"]) or bool(m["regex"]) == bool(m["stat"]):
        raise LabError(f"{where}: metric {m['name']!r}: give a regex, or a phase and a stat")
    if m["stat"]:
        if not re.fullmatch(r"[a-z0-9_]+", m["stat"]):
            raise LabError(f"{where}: metric {m['name']!r}: {m['stat']!r} is no stat name")
        return Metric(m["name"], re.compile(re.escape(m["phase"]) + r" stats:(.*)"),
                      "count", m["stat"])
    try:
        rx = re.compile(m["regex"])
    except re.error as e:
        raise LabError(f"{where}: bad regex {m['regex']!r}: {e}") from e
    if rx.groups < 1:
        raise LabError(f"{where}: regex {m['regex']!r} captures no value")
    return Metric(m["name"], rx, m["unit"])


def _scenario_table(kernels: tuple[str, ...]) -> datafile.Table:
    return datafile.Table({
        "name": Key(str), "arch": Key(str), "command": Key(str), "metrics": Key([METRIC]),
        "repeats": Key(int, 5), "group_by": Key(str, ""), "seed": Key(str, ""),
        "timeout": Key(int, 300), "level": Key(str, "default", choices=LEVELS),
        "clock": Key(str, "host", choices=tuple(CLOCKS)), "cmdline": Key(str, ""),
        "sides": Key([_side_table(kernels)], []), "config": Key((str, [str]), []),
        "before": Key(str, ""), "after": Key(str, ""), "cpu": Key(str, ""),
        "exact_counts": Key(bool, False)})


# [defaults] holds keys of [[scenario]], checked when merged into each.
FILE = datafile.Table({"topic": Key(str, ""), "defaults": Key(dict, {}),
                       "scenario": Key([dict], [])})
DEFAULT_SIDES = [{"label": k, "kernel": k, "cmdline": "", "command": ""} for k in KERNELS]


def _sides(s: dict, origin: str) -> tuple[Side, ...]:
    """Vanilla against patched kernel by default; or the scenario's list of
    sides, the baseline first (label, kernel, cmdline added to the
    scenario's, command in place of the scenario's)."""
    at = f"{origin}: {s['name']}: sides"
    raw = s["sides"] or DEFAULT_SIDES
    if len(raw) < 2:
        raise LabError(f"{at}: one side compares with nothing: give two or more, "
                       "the baseline first")
    sides = [Side(r["label"], r["kernel"], f"{s['cmdline']} {r['cmdline']}".strip(),
                  r["command"] or s["command"]) for r in raw]
    for i, a in enumerate(sides):
        if a.label in CELL_KEYS:
            raise LabError(f"{at}: {a.label!r} names a key of results.json: another label")
        for b in sides[i + 1:]:
            if a.label == b.label:
                raise LabError(f"{at}: two sides are labelled {a.label!r}")
            if (a.variant, a.cmdline, a.command) == (b.variant, b.cmdline, b.command):
                raise LabError(f"{at}: {a.label!r} and {b.label!r} boot the same kernel with "
                               "the same command line and run the same command")
    return tuple(sides)


def _check_level(sc: Scenario, origin: str) -> None:
    if sc.level == "full":
        return
    noisy = [m.name for m in sc.metrics if sc.kind(m.name) not in STEADY_KINDS]
    if noisy:
        what = "is a time" if len(noisy) == 1 else "are times"
        raise LabError(f"{origin}: {sc.name}: level {sc.level!r} runs counts and emulated time "
                       f"only, and {', '.join(map(repr, noisy))} {what} on the host's clock: "
                       "give it level = \"full\", or clock = \"icount\"")


def _config(s: dict, origin: str, configs: Path) -> tuple[str, ...]:
    names = s["config"]
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        if not (re.fullmatch(r"[a-z0-9][a-z0-9_-]*", n) and (configs / f"{n}.config").is_file()):
            raise LabError(f"{origin}: {s['name']}: config {n!r} names no fragment "
                           f"{configs}/<name>.config")
    return tuple(names)


def parse(text: str, origin: str, configs: Path = paths.CONFIGS,
          kernels: tuple[str, ...] = KERNELS) -> list[Scenario]:
    """kernels: what a side may boot (load_all adds bench/<base>/variants.toml's)."""
    data = datafile.parse(text, FILE, origin)
    table = _scenario_table(kernels)
    topic = data["topic"] or Path(origin).stem
    datafile.check(data["defaults"], table, origin, "[defaults]", partial=True)
    out = []
    for i, raw in enumerate(data["scenario"], 1):
        s = datafile.check(data["defaults"] | raw, table, origin,
                           datafile.label("scenario", raw, i))
        metrics = [_metric(m, f"{origin}: {s['name']}") for m in s["metrics"]]
        group = re.compile(s["group_by"]) if s["group_by"] else None
        out.append(Scenario(topic, s["name"], s["arch"], s["command"], tuple(metrics),
                            s["repeats"], group, s["seed"], s["timeout"], s["level"],
                            _sides(s, origin), s["clock"], _config(s, origin, configs),
                            s["before"].strip(), s["after"].strip(), s["cpu"],
                            s["exact_counts"]))
        _check_level(out[-1], origin)
    names = [sc.name for sc in out]
    if len(set(names)) != len(names):
        raise LabError(f"{origin}: scenario names repeat")
    return out


def load_all(directory: Path = paths.BENCH, configs: Path = paths.CONFIGS
             ) -> list[Scenario]:
    """Every scenario of directory's *.toml but variants.toml, which declares
    the kernels their sides may boot besides vanilla and patched."""
    kernels = KERNELS + tuple(variants.load(directory, configs=configs))
    out = []
    for f in sorted(directory.glob("*.toml")):
        if f.name != variants.FILE_NAME:
            out += parse(f.read_text(), datafile.origin(f), configs, kernels)
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
                values.setdefault((m.name, group), []).append(m.value(hit) * UNITS[m.unit])
    return values
