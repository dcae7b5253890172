#!/usr/bin/env python3
"""One metric of several `make bench` runs, side by side: what each step of a
series changed against the vanilla kernel.

Each run is LABEL=results/<date>/qemu-<time>; its "patched" side is that
step of the series, its "vanilla" side the base (the same in every run, which
the table shows, so that runs of an exact metric can be put side by side).

  docs/experiments/series_steps.py --metric instructions \\
      "patches 1-8"=results/2026-11-23/qemu-115113 \\
      "patches 1-10"=results/2026-11-23/qemu-<time>
"""
import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from lab import bench, stats  # noqa: E402


def cells(run: Path, metric: str) -> dict[tuple[str, str], dict]:
    """(scenario, group) -> {side: values} of the first metric whose name has metric."""
    res = bench.Results.from_json(json.loads((run / "results.json").read_text()))
    out = {}
    for scenario, by_metric in res.values.items():
        for (name, group), by_side in by_metric.items():
            if metric in name:
                out.setdefault((scenario.split("/")[-1], group), by_side)
    return out


def mode_name(group: str) -> str:
    """'PA-bits:48,  VA-bits:48,  4K pages' -> '48-bit 4K'."""
    m = re.match(r"PA-bits:(\d+),\s*VA-bits:\d+,\s*(\w+) pages", group)
    return f"{m.group(1)}-bit {m.group(2)}" if m else group


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metric", required=True, help="a part of the metric's name")
    ap.add_argument("runs", nargs="+", metavar="LABEL=DIR")
    args = ap.parse_args()
    runs = [(r.split("=", 1)[0], Path(r.split("=", 1)[1])) for r in args.runs]
    tables = [(label, cells(run, args.metric)) for label, run in runs]
    head = ["scenario", "guest mode"]
    for label, _ in tables:
        head += [f"vanilla ({label})", label, "change"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key in tables[0][1]:
        row = [key[0], mode_name(key[1])]
        for _, t in tables:
            c = t.get(key)
            if not c:
                row += ["-", "-", "-"]
                continue
            v, p = stats.mean(c["vanilla"]), stats.mean(c["patched"])
            row += [f"{v:.0f}", f"{p:.0f}", f"{(p - v) / v * 100:+.1f} %"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
