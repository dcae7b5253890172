"""report.md of a bench run: one table per list of sides, each side against
the baseline, then the errors and the harness's own phases.

A cell says what kind of figure it compares (lab/scenarios.py: a time on
the host's clock, emulated time under -icount, a count). Values that are
exact (the scenario declares its counts exact, or each side repeated one
value) are compared as they are: the difference, "exact", never a noise
judgement, which has no noise to judge. A baseline of 0 has no % change:
the cell gives the difference ("+1570 (from 0)"). The seed's published figure is
the scenario's, so it stands on the scenario's first row.

The points of a sweep (lab/scenarios.py) are one table of their own, a row
a point, in the order of their values, and where the file asks for a fit,
each side's least-squares line (fixed cost and cost per unit) and the line
extended to the size the file names: the trend toward a seed's size, an
extrapolation the report calls one.
"""
import math

from lab import stats
from lab.scenarios import CLOCKS, COUNT, Scenario, size

# What a count's noise verdict says: a count is fewer or more, not faster.
COUNT_VERDICTS = {"faster": "fewer", "slower": "more"}

ICOUNT_NOTE = ("(icount): QEMU ran with -icount shift=0 and one vCPU (icount-2cpu: two, run in "
               "turn): a time is emulated time, the instructions the guest's CPUs emulated at "
               "1 ns each: a repeatable count of work, not a time on any real CPU.")
COUNT_NOTE = ("Counts (KVM statistics, instructions, lock events, passes) are numbers of events. "
              "\"exact\": both sides' values are exact (a scenario with exact_counts, or the same "
              "value in every boot), and the change is the difference itself.")


def fmt_value(x: float, kind: str) -> str:
    """Times are seconds; counts are whole, or a mean of whole numbers."""
    if kind == COUNT:
        return f"{x:.0f}" if x == int(x) or abs(x) >= 100 else f"{x:.1f}"
    return f"{x:.4f}" if x < 10 else f"{x:.2f}" if x < 1000 else f"{x:.0f}"


def fmt_difference(d: float, kind: str) -> str:
    """b - a as it is: a count to the event, a time to the ns."""
    if kind == COUNT:
        text = f"{d:+.1f}".removesuffix(".0")
    else:
        text = f"{d:+.9f}".rstrip("0").rstrip(".") + " s"
    return "0" if d == 0 else text


def fmt_pct(p: float) -> str:
    """One decimal, or two significant digits below 0.05 %: a difference
    beyond noise never reads "+0.0 %" (qemu-100135: 0.2871 s against
    0.2871 s, 54 us apart, was "+0.0 % slower")."""
    if p == 0 or abs(p) >= 0.05:
        return f"{p:+.1f} %"
    return f"{p:+.{1 - math.floor(math.log10(abs(p)))}f} %"


def fmt_from_zero(d: float, kind: str) -> str:
    """A change from a baseline of 0, which has no %: "+1570 (from 0)"."""
    return f"{fmt_difference(d, kind)} (from 0)"


def change_cell(c: stats.Comparison, kind: str) -> str:
    """The % change of the mean; with exact values the difference, and the
    % beside it; from a baseline of 0 the difference, "+1570 (from 0)"; no
    change at all, "0"."""
    if c.change == 0:
        return fmt_difference(0, kind)
    if math.isnan(c.change_pct):
        return fmt_from_zero(c.change, kind)
    # the digits that tell a change from none, where there is one
    pct = fmt_pct(c.change_pct) if c.significant else f"{c.change_pct:+.1f} %"
    return f"{fmt_difference(c.change, kind)} ({pct})" if c.exact else pct


def comparison(sc: Scenario | None, metric: str, xa: list[float], xb: list[float],
               native: bool = False) -> stats.Comparison:
    """The comparison of one cell, which the report, the plot and the index
    of results/ all read: exact where each side repeats one value, or the
    scenario declares the metric exact (exact_counts) and each side gave
    one value, in one boot or more (stats.compare). sc: None for a run of a
    scenario bench/ no longer has; native: two saved native runs (make
    compare), which ran without -icount, so no declaration holds."""
    return stats.compare(xa, xb, sc is not None and sc.exact(metric) and not native)


def verdict(c: stats.Comparison, kind: str) -> str:
    return COUNT_VERDICTS.get(c.verdict, c.verdict) if kind == COUNT else c.verdict


def _mean_sd(xs: list[float], kind: str) -> str:
    return f"{fmt_value(stats.mean(xs), kind)} ± {fmt_value(stats.stdev(xs), kind)} ({len(xs)})"


def side_cells(xa: list[float], xb: list[float], kind: str, c: stats.Comparison | None
               ) -> list[str]:
    """A side's columns against the baseline's values: mean ± sd (n),
    change, vs noise; c: their comparison, None where a side has none."""
    if c is None:
        return [f"n={len(xb)}", "-", "missing data"]
    return [_mean_sd(xb, kind), change_cell(c, kind), verdict(c, kind)]


def _fit_rows(points: list[Scenario], metric: str, group: str, labels: tuple[str, ...],
              cells: dict) -> list[str]:
    """A sweep's line per side: fixed + per unit x points' value / unit, r²,
    and the line at fit_at against the baseline's there."""
    first = points[0].sweep
    per = size(first.fit_per)
    kind = points[0].kind(metric)
    lines, points_of = {}, {}
    for label in labels:
        xs, ys = [], []
        for p in points:
            got = cells.get(p.key, {}).get((metric, group), {}).get(label)
            if got:
                xs.append(p.sweep.x / per)
                ys.append(stats.mean(got))
        line = stats.fit_line(xs, ys)
        if line:
            lines[label], points_of[label] = line, list(zip(xs, ys, strict=True))
    if not lines:
        return []
    at = size(first.fit_at) / per if first.fit_at else None
    # r² over sizes 32x apart says little of the small ones: the largest
    # miss of a point, and each point's own cost per unit, say how straight
    # the line is.
    head = (f"| fit of {metric} | fixed | per {first.fit_per} | r² | largest miss | "
            f"per {first.fit_per} at each point |")
    if at is not None:
        head += f" at {first.fit_at} (extrapolated) | change there |"
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    base = lines.get(labels[0])
    for label, line in lines.items():
        miss = max((abs(y - line.at(x)) / abs(y) for x, y in points_of[label] if y), default=0)
        each = " / ".join(_fit_value(y / x, kind).removesuffix(" s") for x, y in points_of[label])
        row = (f"| {label} | {_fit_value(line.fixed, kind)} | {_fit_value(line.slope, kind)} "
               f"| {line.r2:.4f} | {miss * 100:.1f} % | {each} |")
        if at is not None:
            at_target, baseline_at_target = line.at(at), base.at(at) if base else 0
            change = ("" if label == labels[0] or not baseline_at_target
                      else "0" if round(at_target - baseline_at_target, 9) == 0
                      else f"{(at_target - baseline_at_target) / abs(baseline_at_target) * 100:+.1f} %")
            row += f" {_fit_value(at_target, kind)} | {change} |"
        rows.append(row)
    return rows


def _fit_value(x: float, kind: str) -> str:
    """A line's coefficient: four significant digits (a cost per 2M is a
    fraction of a ms), whole from 1000 on; times in s."""
    text = f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    return text if kind == COUNT else f"{text} s"


def sweep_tables(scs: list[Scenario], res, sides: tuple[str, ...] | None = None) -> list[str]:
    """Each sweep's points, a table per metric and case: each side's mean,
    and each side's change from the baseline, a row per point; then its
    fit, if the file asks for one."""
    families: dict[str, list[Scenario]] = {}
    for sc in scs:
        if sc.sweep:
            families.setdefault(sc.sweep_key, []).append(sc)
    out: list[str] = []
    for family, points in families.items():
        points.sort(key=lambda p: p.sweep.x)
        labels = sides or points[0].labels
        a, others = labels[0], labels[1:]
        cells = {p.key: res.values.get(p.key, {}) for p in points}
        clock = "" if points[0].clock == "host" or sides else f" ({points[0].clock})"
        out += ["", f"Sweep {family}{clock}: {points[0].seed}".rstrip(": ")]
        for metric, group in sorted({k for c in cells.values() for k in c}):
            kind = points[0].kind(metric)
            case = f" [{group}]" if group else ""
            out += ["", f"| {metric}{case} | {a} | " + "".join(f"{b} | change | " for b in others),
                    "|---" * (2 + 2 * len(others)) + "|"]
            for p in points:
                by_side = cells[p.key].get((metric, group), {})
                xa = by_side.get(a, [])
                row = [p.sweep.value, _mean_sd(xa, kind) if xa else "-"]
                for b in others:
                    xb = by_side.get(b, [])
                    if xa and xb:
                        c = comparison(p, metric, xa, xb, bool(sides))
                        row += [_mean_sd(xb, kind), f"{change_cell(c, kind)}, {verdict(c, kind)}"]
                    else:
                        row += [_mean_sd(xb, kind) if xb else "-", "missing data"]
                out.append("| " + " | ".join(row) + " |")
            if points[0].sweep.fit_per:
                fit = _fit_rows(points, metric, group, labels, cells)
                if fit:
                    out += [""] + fit
    return out


def render(scs: list[Scenario], res, sides: tuple[str, ...] | None = None) -> str:
    """Markdown of res (a bench.Results). sides overrides the scenarios'
    labels (for two saved native runs, "A" and "B"). A sweep's points are
    in sweep_tables, not in the tables of single scenarios."""
    tables: dict[tuple[str, ...], list[str]] = {}
    for sc in scs:
        if sc.sweep:
            continue
        labels = sides or sc.labels
        a, others = labels[0], labels[1:]
        rows = tables.setdefault(labels, [])
        cells = res.values.get(sc.key, {})
        name = sc.key if sc.clock == "host" or sides else f"{sc.key} ({sc.clock})"
        seed = sc.seed
        if not cells:
            rows.append(f"| {name} | - | - | - | " + "- | - | no data | " * len(others)
                        + f"{seed} |")
        for (metric, group), by_side in sorted(cells.items()):
            kind = sc.kind(metric)
            xa = by_side.get(a, [])
            compared = [b for b in others if by_side.get(b)]
            base = _mean_sd(xa, kind) if xa and compared else f"n={len(xa)}"
            cols = [base]
            for b in others:
                xb = by_side.get(b, [])
                c = comparison(sc, metric, xa, xb, bool(sides)) if xa and xb else None
                cols += side_cells(xa, xb, kind, c)
            rows.append(f"| {name} | {metric} | {group} | " + " | ".join(cols) + f" | {seed} |")
            seed = ""
    out = []
    for labels, rows in tables.items():
        if out:
            out.append("")
        a, others = labels[0], labels[1:]
        out += [f"| scenario | metric | case | {a} mean ± sd (n) | "
                + "".join(f"{b} mean ± sd (n) | change | vs noise | " for b in others)
                + "seed |", "|---" * (5 + 3 * len(others)) + "|", *rows]
    out += sweep_tables(scs, res, sides)
    if not sides and any(CLOCKS[sc.clock].emulated for sc in scs):   # native runs: no -icount
        out += ["", ICOUNT_NOTE]
    if any(sc.kind(m.name) == COUNT for sc in scs for m in sc.metrics):
        out += ["", COUNT_NOTE]
    errs = [f"- {k}: {e}" for k, es in res.errors.items() for e in es]
    if errs:
        out += ["", "Errors (cells above lack these runs):", *errs]
    if res.phases:
        out += ["", "| phase | wall time (s) | QEMU peak RSS (MiB) |", "|---|---|---|"]
        out += [f"| {w} | {s:.0f} | {r >> 10 if r else '-'} |" for w, s, r in res.phases]
    return "\n".join(out) + "\n"
