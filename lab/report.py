"""The end of make test, make run, make check and lab parse: the boots'
reports printed as one KTAP document, their notes and failures, the counts,
and a copy in build/<base>/results/<kind>-<time>/ (ktap.txt, summary.json)."""
import json
import sys
import time

from lab import ktap, paths
from lab.progress import say


def show(reports: list, kind: str | None, variant: str = "patched") -> int:
    """Print the reports' KTAP, notes, failures and counts; keep them in
    build/<base>/results/<kind>-<time>/ (kind None: nothing is kept). The exit
    code: 1 on any failed test or problem."""
    rows = [row for r in reports for row in r.rows]
    text = ktap.render(rows)
    if kind:
        save(reports, kind, text, variant)
    print(text, end="")
    for n in (n for r in reports for n in r.notes):
        print(f"NOTE: {n}", file=sys.stderr)
    problems = [p for r in reports for p in r.problems]
    for p in problems:
        print(f"FAILED: {p}", file=sys.stderr)
    failed = sum(1 for _, r in rows if r.failed)
    skipped = sum(1 for _, r in rows if r.status == ktap.SKIP)
    passed = len(rows) - failed - skipped
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or problems else 0


def summary(reports: list, variant: str) -> list:
    """summary.json: one entry per boot. Each names the variant (vanilla or
    patched kernel and selftests) so that lab/passsets.py can tell the two
    runs apart; the file stays a list, as it was before it did) and the
    base (a summary without it is the default base's)."""
    return [{"boot": r.label, "base": paths.BASE, "variant": variant,
             "seconds": round(r.seconds, 1),
             "qemu_peak_rss_kib": r.peak_rss_kib, "qemu_cpu_seconds": round(r.cpu_seconds, 1),
             "console_log": r.log, "problems": r.problems, "notes": r.notes,
             "tests": [{"name": lbl, "status": res.status, "detail": res.detail}
                       for lbl, res in r.rows]} for r in reports]


def save(reports: list, kind: str, text: str, variant: str = "patched"):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = paths.RESULTS / f"{kind}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ktap.txt").write_text(text)
    (out / "summary.json").write_text(json.dumps(summary(reports, variant), indent=2) + "\n")
    say(f"results: {out}")
