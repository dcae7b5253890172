"""How long make bench's boots take: the time a run has left, by estimate.

A boot runs several scenarios' sides one after the other (lab/bench.py), so
the unit of time here is one side's run in a boot ("<scenario key>:<side
label>"): a boot's seconds shared evenly among the runs it carried. Earlier
runs (results/*/qemu-*/results.json) give each run a median; the boots of
the run under way replace that with what they took. A run never seen
before counts as the median of all runs seen.

Runs saved before results.json named each boot's runs ("boot_runs") are
read with today's scenarios: the boot's description names its kernel,
command line, clock and CPU, and the sides of the run's scenarios that
boot so are the runs it carried.
"""
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

from lab import paths

RESULTS = paths.BENCH_RESULTS
REPEAT_RE = re.compile(r" boot \d+/\d+$")


def run_name(sc, side) -> str:
    return f"{sc.key}:{side.label}"


def boot_description(build_name: str, key: tuple) -> str:
    """A boot as the phases of results.json name it, without its repeat:
    "boot x86_64-vanilla [kvm.tdp_mmu=N] icount clock -cpu max"."""
    _, cmdline, clock, _, cpu = key
    return (f"boot {build_name} [{cmdline}]" + (f" {clock} clock" if clock != "host" else "")
            + (f" -cpu {cpu}" if cpu else ""))


def runs_of_boots(data: dict, described: dict[str, list[str]]) -> list[tuple[list[str], float]]:
    """(runs, seconds) of each boot of one results.json; described maps a
    boot's description to its runs, for a file that does not name them."""
    named = data.get("boot_runs", {})
    out = []
    for p in data.get("phases", []):
        what = p["what"]
        runs = named.get(what) or described.get(REPEAT_RE.sub("", what))
        if what.startswith("boot ") and runs:
            out.append((runs, p["seconds"]))
    return out


class Clock:
    """Seconds per run, from earlier runs, then from this one's boots."""

    def __init__(self, history: dict[str, list[float]]):
        self.history = {r: statistics.median(xs) for r, xs in history.items()}
        self.seen: dict[str, list[float]] = defaultdict(list)

    def record(self, runs: list[str], seconds: float) -> None:
        for r in runs:
            self.seen[r].append(seconds / len(runs))

    def run(self, name: str) -> float:
        if self.seen.get(name):
            return statistics.mean(self.seen[name])
        if name in self.history:
            return self.history[name]
        every = [*self.history.values(), *(x for xs in self.seen.values() for x in xs)]
        return statistics.median(every) if every else 60.0

    def boot(self, runs: list[str]) -> float:
        return sum(self.run(r) for r in runs)

    def left(self, boots: list[list[str]]) -> float:
        return sum(self.boot(runs) for runs in boots)


def history(describe, results: Path = RESULTS) -> dict[str, list[float]]:
    """run name -> its seconds in each boot of the saved runs; describe(data)
    maps a results.json to {boot description: runs} by today's scenarios."""
    per_run: dict[str, list[float]] = defaultdict(list)
    for f in sorted(results.glob("*/qemu-*/results.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        for runs, seconds in runs_of_boots(data, describe(data)):
            for r in runs:
                per_run[r].append(seconds / len(runs))
    return per_run


def builds(results: Path = RESULTS) -> dict[str, list[float]]:
    """kernel build name -> the seconds of each of make bench's builds of it
    (and "headers <name>", "selftests <name>" since they are recorded)."""
    seen: dict[str, list[float]] = defaultdict(list)
    for f in sorted(results.glob("*/qemu-*/results.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        for p in data.get("phases", []):
            if not p["what"].startswith("boot "):
                seen[p["what"].removeprefix("build ")].append(p["seconds"])
    return dict(seen)


def warm_build(name: str, built: dict[str, list[float]]) -> float:
    """A build with its objects there and nothing changed (or kept by
    lab/buildcache.py): the fastest of its builds, or the median of the
    kernels' fastest where that is less. A kernel recorded only cold (the
    lock-stat kernels: twice, 453 and 654 s, 2026-11-24/25) is no slower
    warm than the others, which take seconds."""
    typical = [min(xs) for k, xs in built.items() if len(xs) >= 2]
    median = statistics.median(typical) if typical else 0.0
    own = built.get(name, [])
    return min(min(own), median) if len(own) >= 2 and typical else median


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
