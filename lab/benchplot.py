"""change.png of a bench run: what changed, against the noise and the seed.

One panel per kind of figure (lab/scenarios.py): times on the host's clock
(emulation speed, noisy), emulated time under -icount (emulated
instructions, 1 ns each) and counts (KVM statistics, instructions, lock
events, passes), whose change means something else. A bar per scenario,
metric, case and side: the % change of the mean, the side B against its
scenario's baseline A, with two standard errors of the difference as its
spread. A bar within that noise is grey whatever its size (a +13 % within
noise is no regression); beyond it a time is green (faster) or red
(slower), a count blue (its direction is good or bad by metric). Exact
values (benchreport.comparison: the same in every boot, or counts the
scenario declares exact) have no noise and no spread: a change is purple,
grey only if there is none, so the legend tells exact counts from noisy
ones. With one run on a side there is no noise to judge against: such a
bar is orange, neither "within noise" nor a verdict, whatever its size.
A baseline of 0 has no % change: its row has no bar but the difference
as report.md writes it ("+1570 (from 0)"). Beside a bar, a black
diamond: the seed's published change, where the scenario's seed text
gives one.

bars() makes every decision and is tested; draw() only draws them.
"""
import math
import re
from dataclasses import dataclass
from pathlib import Path

from lab import benchreport, stats
from lab.progress import say
from lab.scenarios import COUNT, EMULATED_TIME, HOST_TIME, Scenario

PANELS = (HOST_TIME, EMULATED_TIME, COUNT)
TITLES = {HOST_TIME: "times on the host's clock (noisy): % change of the mean",
          EMULATED_TIME: "emulated time (-icount, 1 ns an instruction): % change of the mean",
          COUNT: "counts (KVM stats, instructions, lock events): % change; exact: no spread"}
GREY, GREEN, RED, BLUE, ORANGE, PURPLE = ("0.75", "tab:green", "tab:red", "tab:blue",
                                          "tab:orange", "tab:purple")
# What each colour says, for the legend (in this order, those a panel uses).
MEANINGS = {GREY: "within noise, or no change", GREEN: "faster beyond noise",
            RED: "slower beyond noise", BLUE: "count changed beyond noise",
            PURPLE: "exact (same every boot): changed, no noise to judge",
            ORANGE: "no noise estimate (1 run a side)"}

# "1.66 s (2 passes) -> 0.307 s", "2.90 s (zap, before) -> 0.112 s", "~4 s -> ~3 s"
PAIR_RE = re.compile(r"~?(\d+(?:\.\d+)?)\s*(?:[a-z]+\b)?\s*(?:\([^)]*\)\s*)*->\s*~?(\d+(?:\.\d+)?)")
# a seed that is the change itself: "-35.47 % (stdev 5.63 %)"
CHANGE_RE = re.compile(r"^\s*([+-]\d+(?:\.\d+)?)\s*%")


@dataclass(frozen=True)
class Bar:
    panel: str                 # one of PANELS
    label: str
    change: float              # % change of the mean, B vs A
    spread: float              # two standard errors of the difference, % of A's mean
    colour: str
    seed: float | None         # the seed's published % change, if its text gives one
    sides: tuple[str, str]     # (A, B): the baseline, then what is compared with it
    note: str = ""             # in place of a bar: a change from 0 ("+1570 (from 0)")


def colour(c: stats.Comparison, kind: str) -> str:
    if c.exact:
        return PURPLE if c.significant else GREY
    if min(c.a_n, c.b_n) < 2:
        return ORANGE
    if not c.significant:
        return GREY
    if kind == COUNT:
        return BLUE
    return GREEN if c.change_pct < 0 else RED


def seed_changes(sc: Scenario) -> dict[str, float]:
    """metric name -> the seed's published % change. The seed's clauses
    (split on ";") each give their first before -> after figure (or a
    leading signed percentage); a clause that starts with a metric's first
    word is that metric's ("execute 2.90 s -> 0.112 s"), the first other one
    goes to the scenario's first time metric. A seed that starts "no " says
    it has no figure for this scenario: no marker."""
    text = sc.seed.strip()
    if not text or text.lower().startswith("no "):
        return {}
    times = [m.name for m in sc.metrics if sc.kind(m.name) != COUNT]
    found: dict[str, float] = {}
    unnamed_done = False
    for clause in text.split(";"):
        clause = clause.strip()
        m = PAIR_RE.search(clause)
        if m:
            before, after = float(m.group(1)), float(m.group(2))
            pct = (after - before) / before * 100 if before else None
        else:
            c = CHANGE_RE.match(clause)
            pct = float(c.group(1)) if c else None
        if pct is None:
            continue
        named = [mt for mt in times if clause.lower().startswith(mt.split()[0].lower())]
        if named:
            found.setdefault(named[0], pct)
        elif not unnamed_done and times:
            unnamed_done = True
            first = next((mt for mt in times if mt not in found), None)
            if first:
                found[first] = pct
    return found


def bars(scs: list[Scenario], res, sides: tuple[str, ...] | None = None) -> list[Bar]:
    """One Bar per scenario, metric, case and side besides the baseline, with
    values on both, in the scenarios' order; res is a bench.Results. A label
    names its sides ("patched vs vanilla") only when the run compares more
    than one pair."""
    pairs = {(labels[0], b) for sc in scs for labels in [sides or sc.labels]
             for b in labels[1:]}
    out = []
    for sc in scs:
        a, *others = sides or sc.labels
        seeds = {} if sides else seed_changes(sc)   # two native runs: no seed to compare
        for (metric, group), by_side in sorted(res.values.get(sc.key, {}).items()):
            for b in others:
                xa, xb = by_side.get(a, []), by_side.get(b, [])
                if not xa or not xb:
                    continue
                c = benchreport.comparison(sc, metric, xa, xb, bool(sides))
                kind = sc.kind(metric)
                label = (f"{sc.key}: {metric}" + (f" [{group}]" if group else "")
                         + (f" ({b} vs {a})" if len(pairs) > 1 else ""))
                if math.isnan(c.change_pct):    # from 0: no %, the difference instead
                    note = benchreport.change_cell(c, kind) if c.change else ""
                    out.append(Bar(kind, label, 0.0, 0.0, colour(c, kind), None, (a, b), note))
                    continue
                out.append(Bar(kind, label, c.change_pct, c.noise_pct, colour(c, kind),
                               seeds.get(metric), (a, b)))
    return out


def draw(found: list[Bar], dest: Path) -> Path | None:
    if not found:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        say("bench: matplotlib is not installed; no plot (make venv installs it)")
        return None
    kinds = [k for k in PANELS if any(x.panel == k for x in found)]
    sizes = [sum(1 for x in found if x.panel == k) for k in kinds]
    fig, axes = plt.subplots(len(kinds), 1, squeeze=False,
                             figsize=(11, 1.2 + 0.28 * sum(sizes) + 0.8 * len(kinds)),
                             gridspec_kw={"height_ratios": sizes})
    for ax, kind in zip(axes[:, 0], kinds, strict=True):
        mine = [x for x in found if x.panel == kind]
        ys = range(len(mine))
        ax.barh(ys, [x.change for x in mine], xerr=[x.spread for x in mine], capsize=3,
                color=[x.colour for x in mine], error_kw={"elinewidth": 0.8})
        handles = [Patch(color=c, label=MEANINGS[c]) for c in MEANINGS
                   if any(x.colour == c for x in mine)]
        lo, hi = ax.get_xlim()
        for x, y in zip(mine, ys, strict=True):
            if x.note:      # beside 0, on the side with room for it
                ax.text(0, y, f" {x.note} ", va="center", fontsize=7,
                        ha="left" if hi > -lo else "right")
        seeded = [(x.seed, y) for x, y in zip(mine, ys, strict=True) if x.seed is not None]
        if seeded:
            ax.scatter([s for s, _ in seeded], [y for _, y in seeded], marker="D", color="black",
                       s=18, zorder=3, label="seed's published change")
        ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=7, loc="best")
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(list(ys), [x.label for x in mine], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(TITLES[kind], fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    pairs = {x.sides for x in found}
    if len(pairs) == 1:
        (a, b), = pairs
        what = f"{b} vs {a}"
    else:
        what = "each side vs its scenario's baseline (on its bar: B vs A)"
    fig.suptitle(f"{what}: change of the mean ± 2 standard errors", fontsize=10)
    fig.tight_layout()
    fig.savefig(dest, dpi=100)
    plt.close(fig)
    return dest
