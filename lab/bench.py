"""make bench: vanilla against patched, interleaved, with honest statistics.

Per arch, both variants are built with the benchmark config (no debug
options). Scenarios that share a kernel command line share a boot; for each
repeat a vanilla boot runs them, then a patched boot, so that drift of the
host (TCG timings are noisy) hits both sides alike.
"""
import json
import shlex
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from lab import initramfs, kernel, ktap, paths, profile, qemu, scenarios, selftests, stats
from lab.kernel import Build
from lab.progress import LabError, say
from lab.scenarios import Scenario

BEGIN, END = "LAB-SCENARIO-BEGIN", "LAB-SCENARIO-END"
BOOT_OVERHEAD = 120


@dataclass
class Results:
    """values[scenario key][(metric, group)][variant] = one value per run."""
    values: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(
        lambda: defaultdict(list))))
    errors: dict = field(default_factory=lambda: defaultdict(list))
    phases: list = field(default_factory=list)     # (what, seconds, qemu peak RSS KiB)

    def to_json(self) -> dict:
        return {
            "values": {k: [{"metric": m, "group": g, **{v: xs for v, xs in by_v.items()}}
                           for (m, g), by_v in cells.items()]
                       for k, cells in self.values.items()},
            "errors": dict(self.errors),
            "phases": [{"what": w, "seconds": round(s, 1), "qemu_peak_rss_kib": r}
                       for w, s, r in self.phases],
        }

    @classmethod
    def from_json(cls, data: dict) -> "Results":
        r = cls()
        for k, cells in data.get("values", {}).items():
            for c in cells:
                for v, xs in c.items():
                    if v not in ("metric", "group"):
                        r.values[k][(c["metric"], c["group"])][v] = list(xs)
        for k, errs in data.get("errors", {}).items():
            r.errors[k] = list(errs)
        r.phases = [(p["what"], p["seconds"], p.get("qemu_peak_rss_kib", 0))
                    for p in data.get("phases", [])]
        return r


def guest_script(scs: list[Scenario]) -> str:
    lines = ["cd /kselftest/kvm"]
    for sc in scs:
        argv = shlex.split(sc.command)
        lines += [f"echo {BEGIN} {sc.key}",
                  f"/usr/bin/timeout {sc.timeout} ./{shlex.join(argv)} 2>&1",
                  f"echo {END} {sc.key} rc=$?"]
    return "\n".join(lines) + "\n"


def split_console(lines: list[str]) -> dict[str, tuple[list[str], int | None]]:
    """scenario key -> (its output lines, exit code or None if it never ended)."""
    out: dict[str, tuple[list[str], int | None]] = {}
    current = None
    for raw in lines:
        line = ktap.clean(raw)
        if line.startswith(BEGIN + " "):
            current = line.split()[1]
            out[current] = ([], None)
        elif line.startswith(END + " ") and current:
            rc = line.rsplit("rc=", 1)[-1]
            out[current] = (out[current][0], int(rc) if rc.isdigit() else -1)
            current = None
        elif current:
            out[current][0].append(line)
    return out


def record_run(res: Results, sc: Scenario, variant: str, output: list[str] | None,
               rc: int | None, where: str) -> None:
    """Add one run's figures; a crash or a missing metric line is an error of
    that cell, and the rest of the report still prints."""
    if output is None:
        res.errors[sc.key].append(f"{variant}: did not run ({where})")
        return
    if rc is None:
        res.errors[sc.key].append(f"{variant}: never finished ({where}); last: "
                                  + " | ".join(output[-3:]))
        return
    if rc != 0:
        res.errors[sc.key].append(f"{variant}: exit {rc} ({where}); last: " + " | ".join(output[-3:]))
        return
    got = scenarios.read_metrics(sc, output)
    for m in sc.metrics:
        if not any(name == m.name for name, _ in got):
            res.errors[sc.key].append(f"{variant}: no line for metric {m.name!r} "
                                      f"(/{m.regex.pattern}/) in {where}")
    for (metric, group), xs in got.items():
        # A figure printed several times in a run (one per iteration) counts
        # as its mean, as the seeds averaged iterations.
        res.values[sc.key][(metric, group)][variant].append(stats.mean(xs))


def run_native(scs: list[Scenario], ksft_kvm: Path, label: str) -> Results:
    """Run the scenarios on this host's own /dev/kvm (a real machine booted
    into the kernel under test), from an installed kvm selftests directory."""
    if not Path("/dev/kvm").exists():
        raise LabError("bench-native: /dev/kvm does not exist on this host")
    res = Results()
    for sc in scs:
        for r in range(sc.repeats):
            say(f"native {label}: {sc.key} run {r + 1}/{sc.repeats}")
            argv = shlex.split(sc.command)
            try:
                p = subprocess.run([str(ksft_kvm / argv[0]), *argv[1:]], capture_output=True,
                                   text=True, timeout=sc.timeout, cwd=ksft_kvm)
                record_run(res, sc, label, (p.stdout + p.stderr).splitlines(), p.returncode,
                           "host")
            except subprocess.TimeoutExpired:
                record_run(res, sc, label, [], None, f"host, past {sc.timeout} s")
    return res


def _by_cmdline(scs: list[Scenario]) -> dict[str, list[Scenario]]:
    groups: dict[str, list[Scenario]] = defaultdict(list)
    for sc in scs:
        groups[sc.cmdline].append(sc)
    return groups


def run_qemu(scs: list[Scenario]) -> Results:
    res = Results()
    for arch in sorted({sc.arch for sc in scs}):
        prof = profile.load(arch)
        builds = {v: Build(prof, v, debug=False) for v in kernel.VARIANTS}
        for v, b in builds.items():
            t0 = time.monotonic()
            kernel.build(b)
            res.phases.append((f"build {b.name}", time.monotonic() - t0, 0))
        # One set of selftest binaries for both kernels, from the series: the
        # kernel is what is compared, and the series may add test options.
        tests_of = builds["patched"]
        selftests.build(tests_of)
        for i, (cmdline, group) in enumerate(_by_cmdline([s for s in scs if s.arch == arch]).items()):
            files = sorted({shlex.split(s.command)[0] for s in group})
            repeats = max(s.repeats for s in group)
            for r in range(repeats):
                todo = [s for s in group if r < s.repeats]
                for v, b in builds.items():
                    initrd = initramfs.pack(b, files, [], {"bench": guest_script(todo)},
                                            paths.BUILD / f"initramfs-bench-{b.name}.cpio.gz",
                                            "bench/", selftests_of=tests_of)
                    where = f"{arch} {v} boot {r + 1}/{repeats}"
                    log = paths.LOGS / f"bench-{b.name}-{i}-{r + 1}.log"
                    budget = BOOT_OVERHEAD + sum(s.timeout + 5 for s in todo)
                    say(f"bench {where}: {', '.join(s.name for s in todo)} (log {log})")
                    con = qemu.run(prof.qemu_argv(b.image, initrd,
                                                  f"lab.boot=bench {cmdline}".strip()),
                                   budget, log, "LAB-DONE")
                    res.phases.append((f"boot {where}", con.seconds, con.peak_rss_kib))
                    sections = split_console(con.lines)
                    for s in todo:
                        out, rc = sections.get(s.key, (None, None))
                        record_run(res, s, v, out, rc,
                                   f"{where}, {con.outcome}, log {log}")
    return res


def _fmt(x: float) -> str:
    return f"{x:.4f}" if x < 10 else f"{x:.2f}"


def report(scs: list[Scenario], res: Results, a: str = "vanilla", b: str = "patched") -> str:
    seeds = {sc.key: sc.seed for sc in scs}
    out = [f"| scenario | metric | case | {a} mean ± sd (n) | {b} mean ± sd (n) | change | "
           "vs noise | seed |", "|---|---|---|---|---|---|---|---|"]
    for sc in scs:
        cells = res.values.get(sc.key, {})
        if not cells:
            out.append(f"| {sc.key} | - | - | - | - | - | no data | {seeds[sc.key]} |")
        for (metric, group), by_v in sorted(cells.items()):
            xa, xb = by_v.get(a, []), by_v.get(b, [])
            if not xa or not xb:
                out.append(f"| {sc.key} | {metric} | {group} | n={len(xa)} | n={len(xb)} | - | "
                           f"missing data | {seeds[sc.key]} |")
                continue
            c = stats.compare(xa, xb)
            out.append(f"| {sc.key} | {metric} | {group} | {_fmt(c.a_mean)} ± {_fmt(c.a_stdev)} "
                       f"({c.a_n}) | {_fmt(c.b_mean)} ± {_fmt(c.b_stdev)} ({c.b_n}) | "
                       f"{c.change_pct:+.1f} % | {c.verdict} | {seeds[sc.key]} |")
    errs = [f"- {k}: {e}" for k, es in res.errors.items() for e in es]
    if errs:
        out += ["", "Errors (cells above lack these runs):", *errs]
    if res.phases:
        out += ["", "| phase | wall time (s) | QEMU peak RSS (MiB) |", "|---|---|---|"]
        out += [f"| {w} | {s:.0f} | {r >> 10 if r else '-'} |" for w, s, r in res.phases]
    return "\n".join(out) + "\n"


def plot(scs: list[Scenario], res: Results, dest: Path, a="vanilla", b="patched") -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("bench: matplotlib is not installed; no plot (make venv installs it)")
        return None
    labels, changes, errs = [], [], []
    for sc in scs:
        for (metric, group), by_v in sorted(res.values.get(sc.key, {}).items()):
            xa, xb = by_v.get(a, []), by_v.get(b, [])
            if xa and xb:
                c = stats.compare(xa, xb)
                labels.append(f"{sc.name}: {metric}" + (f"\n{group}" if group else ""))
                changes.append(c.change_pct)
                # stdev of the patched runs relative to the vanilla mean
                errs.append(c.b_stdev / c.a_mean * 100 if c.a_mean else 0)
    if not labels:
        return None
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 0.6), 7))
    ax.bar(range(len(labels)), changes, yerr=errs, capsize=4,
           color=["tab:green" if x < 0 else "tab:red" for x in changes])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=60, ha="right")
    ax.set_ylabel(f"% runtime change, {b} vs {a}")
    ax.set_title("kvm-mmu-series benchmark (lower is faster)")
    fig.tight_layout()
    fig.savefig(dest, dpi=100)
    plt.close(fig)
    return dest


def write(scs: list[Scenario], res: Results, out: Path, a="vanilla", b="patched") -> str:
    out.mkdir(parents=True, exist_ok=True)
    text = report(scs, res, a, b)
    (out / "results.json").write_text(json.dumps(
        {"scenarios": [s.key for s in scs], **res.to_json()}, indent=1) + "\n")
    (out / "report.md").write_text(text)
    plot(scs, res, out / "change.png", a, b)
    return text
