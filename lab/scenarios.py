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

A sweep runs one scenario at several points (`sweep = ["64M", "128M"]`):
each point is a scenario of its own, its name and command with the point
in place of "{sweep}", and the report gives the sweep's trend in a table of
its own, with a least-squares line through each side's points where the
file asks for one (`sweep_fit_per = "2M"`: value = fixed + per 2M x size
/ 2M), extended to a size the sweep cannot reach (`sweep_fit_at`, e.g. a
seed's). A metric may be per another metric of the run (`per = "aging
passes"`): lock acquisitions per aging pass.

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
    # Its emulated times repeat boot to boot (one vCPU); two vCPUs taking
    # turns do not: 0.079, 0.074 and 0.022 s for one side in qemu-025147.
    steady_times: bool = True

    @property
    def emulated(self) -> bool:
        """Guest time counts emulated instructions (-icount)."""
        return "-icount" in self.qemu_args


# shift=0: 1 ns per instruction; sleep=off: an idle guest's time jumps to its
# next timer instead of following the host. One vCPU: QEMU keeps one
# instruction count for all vCPUs, which run in turn, and its PMU's
# instruction counter reads that count; with one vCPU a perf counter of a
# thread counts that thread's instructions alone.
# Two vCPUs under -icount run in turn on QEMU's one thread, and guest time
# counts both vCPUs' instructions: a phase's time is the work of both, no
# longer one thread's (a perf counter then counts whichever vCPU runs).
ICOUNT_ARGS = ("-icount", "shift=0,sleep=off")
CLOCKS = {"host": Clock((), steady_times=False), "icount": Clock(ICOUNT_ARGS, smp=1),
          "icount-2cpu": Clock(ICOUNT_ARGS, smp=2, steady_times=False)}


@dataclass(frozen=True)
class Metric:
    name: str
    regex: re.Pattern
    unit: str
    stat: str = ""      # a KVM binary stat of the phase's stats line (regex matches it)
    per: str = ""       # another metric of the scenario this one's value is divided by

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


SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size(text: str) -> float | None:
    """A sweep point's number: "8" is 8, "64M" is 64 MiB in bytes; None
    for anything else."""
    got = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", text)
    return float(got.group(1)) * SIZE_UNITS[got.group(2)] if got else None


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: the scenario the points share (its name with
    "{sweep}"), this point's value and number, and the fit the file asks
    for (fit_per: the unit of its slope, "" for no fit; fit_at: a value to
    extend the line to)."""
    family: str
    value: str
    x: float
    fit_per: str = ""
    fit_at: str = ""


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
    sweep: SweepPoint | None = None

    @property
    def key(self) -> str:
        return f"{self.topic}/{self.name}"

    @property
    def sweep_key(self) -> str:
        """The key the points of its sweep share ("topic/name-{sweep}")."""
        return f"{self.topic}/{self.sweep.family}" if self.sweep else self.key

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.sides)

    def kind(self, metric: str) -> str:
        """HOST_TIME, EMULATED_TIME or COUNT: what metric's figure is."""
        unit = next((m.unit for m in self.metrics if m.name == metric), "s")
        if unit == "count":
            return COUNT
        return EMULATED_TIME if CLOCKS[self.clock].emulated else HOST_TIME

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
                         "unit": Key(str, "s", choices=tuple(UNITS)), "per": Key(str, "")})


def _metric(m: dict, where: str) -> Metric:
    if bool(m["phase"]) != bool(m["stat"]) or bool(m["regex"]) == bool(m["stat"]):
        raise LabError(f"{where}: metric {m['name']!r}: give a regex, or a phase and a stat")
    if m["stat"]:
        if not re.fullmatch(r"[a-z0-9_]+", m["stat"]):
            raise LabError(f"{where}: metric {m['name']!r}: {m['stat']!r} is no stat name")
        return Metric(m["name"], re.compile(re.escape(m["phase"]) + r" stats:(.*)"),
                      "count", m["stat"], m["per"])
    try:
        rx = re.compile(m["regex"])
    except re.error as e:
        raise LabError(f"{where}: bad regex {m['regex']!r}: {e}") from e
    if rx.groups < 1:
        raise LabError(f"{where}: regex {m['regex']!r} captures no value")
    return Metric(m["name"], rx, m["unit"], per=m["per"])


def _check_per(metrics: list[Metric], where: str) -> None:
    """A metric per another: of one the scenario reads itself, never a
    chain (a ratio of ratios reads as neither)."""
    plain = {m.name for m in metrics if not m.per}
    for m in metrics:
        if m.per and m.per not in plain:
            raise LabError(f"{where}: metric {m.name!r} is per {m.per!r}, which is no metric "
                           f"of its own; one of: {', '.join(map(repr, sorted(plain)))}")


def _scenario_table(kernels: tuple[str, ...]) -> datafile.Table:
    return datafile.Table({
        "name": Key(str), "arch": Key(str), "command": Key(str), "metrics": Key([METRIC]),
        "repeats": Key(int, 5), "group_by": Key(str, ""), "seed": Key(str, ""),
        "timeout": Key(int, 300), "level": Key(str, "default", choices=LEVELS),
        "clock": Key(str, "host", choices=tuple(CLOCKS)), "cmdline": Key(str, ""),
        "sides": Key([_side_table(kernels)], []), "config": Key((str, [str]), []),
        "before": Key(str, ""), "after": Key(str, ""), "cpu": Key(str, ""),
        "exact_counts": Key(bool, False), "sweep": Key([str], []),
        "sweep_fit_per": Key(str, ""), "sweep_fit_at": Key(str, "")})


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
    noisy = [m.name for m in sc.metrics if sc.kind(m.name) not in STEADY_KINDS
             or (sc.kind(m.name) == EMULATED_TIME and not CLOCKS[sc.clock].steady_times)]
    if noisy:
        what = "is a time" if len(noisy) == 1 else "are times"
        raise LabError(f"{origin}: {sc.name}: level {sc.level!r} runs counts and emulated time "
                       f"that repeat only, and {', '.join(map(repr, noisy))} {what} of clock "
                       f"{sc.clock!r}, which do not: give it level = \"full\", or clock = "
                       "\"icount\"")


def _config(s: dict, origin: str, configs: Path) -> tuple[str, ...]:
    names = s["config"]
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        if not (re.fullmatch(r"[a-z0-9][a-z0-9_-]*", n) and (configs / f"{n}.config").is_file()):
            raise LabError(f"{origin}: {s['name']}: config {n!r} names no fragment "
                           f"{configs}/<name>.config")
    return tuple(names)


SWEEP = "{sweep}"


def _sweep_points(s: dict, origin: str) -> list[tuple[dict, SweepPoint | None]]:
    """A scenario's points, each its keys with the point in place of
    "{sweep}" (name, command, the sides' commands); a scenario without a
    sweep is its one point."""
    at = f"{origin}: {s['name']}"
    if not s["sweep"]:
        if SWEEP in s["name"] or s["sweep_fit_per"] or s["sweep_fit_at"]:
            raise LabError(f"{at}: names {SWEEP} or a fit, but gives no sweep = [...]")
        return [(s, None)]
    if SWEEP not in s["name"] or SWEEP not in s["command"] + "".join(
            r["command"] for r in s["sides"]):
        raise LabError(f"{at}: a sweep puts each point in place of {SWEEP}: "
                       "in the name and in the command")
    for v in [*s["sweep"], *filter(None, (s["sweep_fit_per"], s["sweep_fit_at"]))]:
        if not size(v):
            raise LabError(f"{at}: sweep value {v!r} is no number or size above 0 "
                           "(e.g. 8, 64M, 1G)")
    # A point changes the name and commands alone: a command line, guest
    # lines or configs that named {sweep} would boot it literally.
    others = [k for k in ("cmdline", "before", "after", "config", "seed")
              if SWEEP in str(s[k])] + [f"sides' {k}" for r in s["sides"]
                                         for k in ("cmdline", "label") if SWEEP in r[k]]
    if others:
        raise LabError(f"{at}: {SWEEP} stands in the name and commands only, not in "
                       f"{', '.join(others)}")
    if s["sweep_fit_at"] and not s["sweep_fit_per"]:
        raise LabError(f"{at}: sweep_fit_at extends a fit: give sweep_fit_per too")
    if len(set(s["sweep"])) != len(s["sweep"]):
        raise LabError(f"{at}: sweep values repeat")
    out = []
    for v in s["sweep"]:
        sides = [r | {"command": r["command"].replace(SWEEP, v)} for r in s["sides"]]
        point = s | {"name": s["name"].replace(SWEEP, v),
                     "command": s["command"].replace(SWEEP, v), "sides": sides}
        out.append((point, SweepPoint(s["name"], v, size(v), s["sweep_fit_per"],
                                      s["sweep_fit_at"])))
    return out


def parse(text: str, origin: str, configs: Path = paths.CONFIGS,
          kernels: tuple[str, ...] = KERNELS) -> list[Scenario]:
    """kernels: what a side may boot (load_all adds bench/<base>/variants.toml's)."""
    data = datafile.parse(text, FILE, origin)
    table = _scenario_table(kernels)
    topic = data["topic"] or Path(origin).stem
    datafile.check(data["defaults"], table, origin, "[defaults]", partial=True)
    out = []
    for i, raw in enumerate(data["scenario"], 1):
        checked = datafile.check(data["defaults"] | raw, table, origin,
                                 datafile.label("scenario", raw, i))
        for s, point in _sweep_points(checked, origin):
            metrics = [_metric(m, f"{origin}: {s['name']}") for m in s["metrics"]]
            _check_per(metrics, f"{origin}: {s['name']}")
            group = re.compile(s["group_by"]) if s["group_by"] else None
            out.append(Scenario(topic, s["name"], s["arch"], s["command"], tuple(metrics),
                                s["repeats"], group, s["seed"], s["timeout"], s["level"],
                                _sides(s, origin), s["clock"], _config(s, origin, configs),
                                s["before"].strip(), s["after"].strip(), s["cpu"],
                                s["exact_counts"], point))
            _check_level(out[-1], origin)
            if s["exact_counts"] and CLOCKS[s["clock"]].smp != 1:
                raise LabError(f"{origin}: {s['name']}: exact_counts declares the counts of "
                               f"one vCPU under -icount, not of clock {s['clock']!r}: the "
                               "report still calls values exact that repeat in every boot")
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
        # a sweep by its name with "{sweep}" is all of its points
        known: dict[str, list[Scenario]] = {}
        for s in all_:
            for n in {s.key, s.name, s.sweep_key, s.sweep_key.split("/", 1)[1]}:
                known.setdefault(n, []).append(s)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise LabError(f"unknown scenario(s) {', '.join(unknown)}; known: "
                           + ", ".join(sorted({s.sweep_key for s in all_})))
        return list(dict.fromkeys(s for n in names for s in known[n]))
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
    return _divide_per_metrics(sc, values)


def _divide_per_metrics(sc: Scenario, values: dict) -> dict:
    """Each metric per another (Metric.per) divided by that metric's mean
    in the same run and group; no value where that is 0 or missing, which
    record_run reports as the figure missing."""
    out = dict(values)
    for m in sc.metrics:
        if not m.per:
            continue
        for (name, group) in [k for k in out if k[0] == m.name]:
            den = out.get((m.per, group))
            total = sum(den) / len(den) if den else 0
            nums = out.pop((name, group))
            if total:
                out[(name, group)] = [x / total for x in nums]
    return out
