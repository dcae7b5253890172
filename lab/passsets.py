"""Two saved make test runs side by side, boot by boot: each test's result
in either (pass, flaky, fail, skip with its reason, absent), the tests whose
result differs marked, and a line of counts per boot.

The point is vanilla against patched: a vanilla run reports the tests the
series adds as "SKIP not in this variant" (testrun.for_variant), so what
else differs is what the series changed (or a flake).

Runs of two bases compare too (7.3 alone beside 6.12 patched, say): each
run's base is in its summary.json, and the header names both when they
differ. It reads summary.json, not ktap.txt: the summary keeps each boot's rows
apart and the statuses the KTAP folds together (flaky is "ok", not run
and timeout are "not ok"). A summary written before it recorded the
variant is a patched run's: vanilla runs came after.
"""
import json
from dataclasses import dataclass
from pathlib import Path

from lab import ktap, paths
from lab.progress import LabError

ABSENT = "absent"
# A cell longer than this (a failure's assertion, a long skip reason) is cut:
# the full text is in the run's ktap.txt.
CELL = 48


@dataclass
class Run:
    where: str
    variant: str
    boots: dict  # boot label -> {test name -> ktap.Result}, in the run's order
    base: str = paths.DEFAULT_BASE

    @property
    def arches(self) -> set[str]:
        # "check" is no arch's; build and harness rows are "<arch>/...".
        return {b.split("/")[0] for b in self.boots if "/" in b}


def from_summary(data: list, where: str) -> Run:
    boots, variants, bases = {}, set(), set()
    for boot in data:
        variants.add(boot.get("variant", "patched"))
        bases.add(boot.get("base", paths.DEFAULT_BASE))
        tests = boots.setdefault(boot["boot"], {})
        for t in boot["tests"]:
            # Rows are "<boot>: <test>"; the check's are "check: ...".
            name = t["name"].split(": ", 1)[-1]
            tests[name] = ktap.Result(name, t["status"], t.get("detail", ""))
    if len(variants) > 1:
        raise LabError(f"{where}: boots of several variants: {', '.join(sorted(variants))}")
    if len(bases) > 1:
        raise LabError(f"{where}: boots of several bases: {', '.join(sorted(bases))}")
    return Run(where, variants.pop() if variants else "patched", boots,
               bases.pop() if bases else paths.DEFAULT_BASE)


def load(d: Path) -> Run:
    f = Path(d) / "summary.json"
    try:
        return from_summary(json.loads(f.read_text()), str(d))
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise LabError(f"{f}: not a make test summary: {e}") from e


def only(run: Run, boots: list[str]) -> Run:
    """run with these boots alone (passes --boot: a LAVA run of one boot
    beside a make test run of every boot); a boot it lacks stays absent."""
    return Run(run.where, run.variant, {b: t for b, t in run.boots.items() if b in boots},
               run.base)


def cell(r: ktap.Result | None) -> str:
    if r is None:
        return ABSENT
    text = {ktap.SKIP: f"skip: {r.detail}", ktap.NOT_RUN: f"not run: {r.detail}",
            ktap.FAIL: f"fail: {r.detail}"}.get(r.status, r.status)
    text = text.rstrip(": ")
    return text if len(text) <= CELL else text[:CELL - 3] + "..."


def differs(a: ktap.Result | None, b: ktap.Result | None) -> bool:
    """The status, not the detail: two failures with other messages, or two
    skips with other reasons, are the same result."""
    return (a and a.status) != (b and b.status)


def counts(tests: dict | None) -> str:
    if tests is None:
        return "absent"
    rs = tests.values()
    failed = sum(1 for r in rs if r.failed)
    skipped = sum(1 for r in rs if r.status == ktap.SKIP)
    # As report.show counts them: a flaky pass is a pass.
    return f"{len(rs) - failed - skipped} passed, {failed} failed, {skipped} skipped"


def render(a: Run, b: Run) -> str:
    # The base is said when the two differ (6.12 against 7.3, say).
    how = (lambda r: f"{r.variant}, base {r.base}") if a.base != b.base else (
        lambda r: r.variant)
    out = [f"A: {a.where} ({how(a)})", f"B: {b.where} ({how(b)})",
           "(* the result differs)"]
    for boot in dict.fromkeys([*a.boots, *b.boots]):
        ta, tb = a.boots.get(boot), b.boots.get(boot)
        names = list(dict.fromkeys([*(ta or {}), *(tb or {})]))
        rows = [(n, (ta or {}).get(n), (tb or {}).get(n)) for n in names]
        wn = max(len(n) for n in names) if names else 0
        wa = max((len(cell(ra)) for _, ra, _ in rows), default=0)
        out.append(f"{boot}")
        for n, ra, rb in rows:
            mark = "*" if differs(ra, rb) else " "
            out.append(f"  {mark} {n:<{wn}}  {cell(ra):<{wa}}  | {cell(rb)}".rstrip())
        out.append(f"  {boot}: A {counts(ta)}; B {counts(tb)}; "
                   f"{sum(1 for _, ra, rb in rows if differs(ra, rb))} differ")
    return "\n".join(out) + "\n"


def newest_patched(arches: set[str], results: Path | None = None) -> Path | None:
    """The newest saved make test run of the patched variant with these
    arches (its directory names sort by time), or None."""
    for d in sorted((results or paths.RESULTS).glob("test-*"), reverse=True):
        try:
            run = load(d)
        except LabError:
            continue  # a run cut short before its summary: not one to compare with
        if run.variant == "patched" and run.arches == arches:
            return d
    return None


def against_patched(vanilla: Run, results: Path | None = None) -> str:
    """The end of make test VARIANT=vanilla: the comparison with the newest
    patched run of the same arches; "" if there is none, or if the run has
    no arch's rows to compare."""
    d = vanilla.arches and newest_patched(vanilla.arches, results)
    if not d:
        return ""
    return (f"passes: compared with {d}, the newest patched run of "
            f"{', '.join(sorted(vanilla.arches))}\n" + render(load(d), vanilla))
