"""make bench: each scenario's sides, interleaved, with honest statistics.

Per arch, the kernels the scenarios need are built with the benchmark config
(no debug options). A scenario compares two or more sides, each a kernel
booted with a command line and running a command (vanilla and patched by
default), every side against the first, its baseline; the sides of all
scenarios that boot alike share a boot. For each repeat every boot runs
once, in the same order, so that drift of the host (TCG timings are noisy)
hits every side of a comparison alike.
"""
import json
import shlex
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from lab import (benchplot, benchreport, benchtime, buildcache, initramfs, kernel, ktap, markers,
                 paths, profile, qemu, scenarios, selftests, stats)
from lab.kernel import Build
from lab.progress import LabError, say
from lab.scenarios import Scenario, Side

BEGIN, END = markers.SCENARIO_BEGIN, markers.SCENARIO_END
BOOT_OVERHEAD = 120


@dataclass
class Results:
    """values[scenario key][(metric, group)][side label] = one value per run."""
    values: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(
        lambda: defaultdict(list))))
    errors: dict = field(default_factory=lambda: defaultdict(list))
    phases: list = field(default_factory=list)     # (what, seconds, qemu peak RSS KiB)
    # a boot's phase (what) -> the scenario sides it ran (benchtime.run_name):
    # what later runs estimate their time left from
    boot_runs: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "values": {k: [{"metric": m, "group": g, **{v: xs for v, xs in by_v.items()}}
                           for (m, g), by_v in cells.items()]
                       for k, cells in self.values.items()},
            "errors": dict(self.errors),
            "phases": [{"what": w, "seconds": round(s, 1), "qemu_peak_rss_kib": r}
                       for w, s, r in self.phases],
            "boot_runs": self.boot_runs,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Results":
        r = cls()
        for k, cells in data.get("values", {}).items():
            for c in cells:
                for v, xs in c.items():
                    if v not in scenarios.CELL_KEYS:
                        r.values[k][(c["metric"], c["group"])][v] = list(xs)
        for k, errs in data.get("errors", {}).items():
            r.errors[k] = list(errs)
        r.phases = [(p["what"], p["seconds"], p.get("qemu_peak_rss_kib", 0))
                    for p in data.get("phases", [])]
        r.boot_runs = dict(data.get("boot_runs", {}))
        return r

    @classmethod
    def compared(cls, runs: list[dict], sides: tuple[str, str]) -> "Results":
        """Two saved runs (results.json) as one, each run's values under its
        side's label (make compare: A, the baseline, and B)."""
        merged = cls()
        for run, side in zip(runs, sides, strict=True):
            one = cls.from_json(run)
            for k, cells in one.values.items():
                for cell, by_v in cells.items():
                    for xs in by_v.values():
                        merged.values[k][cell][side] += xs
            for k, errs in one.errors.items():
                merged.errors[k] += [f"{side}: {e}" for e in errs]
        return merged


NATIVE = paths.BENCH_RESULTS / "native"


def save_native(label: str, scs: list[Scenario], res: Results) -> Path:
    """results/native/<label>.json: one native run, for make compare."""
    dest = NATIVE / f"{label}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"label": label, "scenarios": [s.key for s in scs],
                                **res.to_json()}, indent=1) + "\n")
    return dest


def load_native(name: str) -> dict:
    """A saved native run by label, or by the path of its .json."""
    f = Path(name) if name.endswith(".json") else NATIVE / f"{name}.json"
    if not f.exists():
        raise LabError(f"compare: no saved run {f}")
    return json.loads(f.read_text())


def out_dir(kind: str) -> Path:
    """results/[<base>/]<date>/<kind>-<time>/: where a bench run (or a
    compare) is kept (paths.BENCH_RESULTS)."""
    return Path(paths.BENCH_RESULTS / time.strftime("%Y-%m-%d")
                / f"{kind}-{time.strftime('%H%M%S')}")


def section(sc: Scenario, side: Side) -> str:
    """The name of a side's run on the console: the scenario's key, or, for
    a side with a command of its own (which may share a boot with another
    side of the scenario), the key and the side's index."""
    return sc.key if side.command == sc.command else f"{sc.key}@{sc.sides.index(side)}"


def guest_script(runs: list[tuple[Scenario, Side]]) -> str:
    lines = ["cd /kselftest/kvm"]
    for sc, side in runs:
        argv = shlex.split(side.command)
        name = section(sc, side)
        lines += [f"echo {BEGIN} {name}",
                  *([sc.before] if sc.before else []),
                  f"/usr/bin/timeout {sc.timeout} ./{shlex.join(argv)} 2>&1",
                  "rc=$?",
                  *([sc.after] if sc.after else []),
                  f"echo {END} {name} rc=$rc"]
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


def record_run(res: Results, sc: Scenario, side: str, output: list[str] | None,
               rc: int | None, where: str) -> None:
    """Add one run's figures for one side (its label); a crash or a missing
    metric line is an error of that cell, and the rest of the report still
    prints."""
    if output is None:
        res.errors[sc.key].append(f"{side}: did not run ({where})")
        return
    if rc is None:
        res.errors[sc.key].append(f"{side}: never finished ({where}); last: "
                                  + " | ".join(output[-3:]))
        return
    if rc != 0:
        res.errors[sc.key].append(f"{side}: exit {rc} ({where}); last: " + " | ".join(output[-3:]))
        return
    got = scenarios.read_metrics(sc, output)
    for m in sc.metrics:
        if not any(name == m.name for name, _ in got):
            per = f", or its {m.per!r} was 0" if m.per else ""
            res.errors[sc.key].append(f"{side}: no line for metric {m.name!r} "
                                      f"(/{m.regex.pattern}/){per} in {where}")
    for (metric, group), xs in got.items():
        # A figure printed several times in a run (one per iteration) counts
        # as its mean, as the seeds averaged iterations.
        res.values[sc.key][(metric, group)][side].append(stats.mean(xs))


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


# kernel variant, command line, clock, bench-only config fragments
BootKey = tuple[str, str, str, tuple[str, ...], str]


def boot_plan(scs: list[Scenario]) -> dict[BootKey, list[tuple[Scenario, Side]]]:
    """(kernel variant, command line, clock, config, QEMU cpu) -> the scenario sides
    that boot so, in the order the scenarios list them (a scenario's
    baseline boots first)."""
    plan: dict[BootKey, list[tuple[Scenario, Side]]] = {}
    for sc in scs:
        for side in sc.sides:
            plan.setdefault((side.variant, side.cmdline, sc.clock, sc.config, sc.cpu),
                            []).append((sc, side))
    return plan


def schedule(plan: dict[BootKey, list]) -> list[tuple[int, int, BootKey, list]]:
    """(repeat, index of the boot in the plan, its key, the sides it runs) in
    the order they run: each repeat boots every key of the plan once, in the
    plan's order, with the sides whose scenario wants that many repeats."""
    repeats = max((sc.repeats for members in plan.values() for sc, _ in members), default=0)
    out = []
    for r in range(repeats):
        for i, (key, members) in enumerate(plan.items()):
            todo = [(s, side) for s, side in members if r < s.repeats]
            if todo:
                out.append((r, i, key, todo))
    return out


# The kernel whose tree the selftests of every boot come from.
TESTS_OF = ("patched", ())


def kernels(plan: dict[BootKey, list]) -> list[tuple[str, tuple[str, ...]]]:
    """(variant, config) of every kernel the plan boots, and no other: the
    selftests need only the patched tree's headers (kernel.headers)."""
    return list(dict.fromkeys((k[0], k[3]) for k in plan))


@dataclass(frozen=True)
class Boot:
    """One boot of a run: its arch, repeat, index in the arch's plan, key,
    and the scenario sides it runs."""
    arch: str
    repeat: int
    index: int
    key: BootKey
    todo: list

    @property
    def runs(self) -> list[str]:
        return [benchtime.run_name(sc, side) for sc, side in self.todo]

    @property
    def description(self) -> str:
        return benchtime.boot_description(build_name(self.arch, self.key), self.key)


def build_name(arch: str, key: BootKey) -> str:
    return Build(profile.load(arch), key[0], debug=False, extra=key[3]).name


def boots(scs: list[Scenario]) -> list[Boot]:
    """Every boot of a run, in order: arch by arch, each arch's schedule."""
    return [Boot(arch, r, i, key, todo) for arch in sorted({sc.arch for sc in scs})
            for r, i, key, todo in schedule(boot_plan([s for s in scs if s.arch == arch]))]


def described(data: dict, known: list[Scenario]) -> dict[str, list[str]]:
    """A saved run's boots by description -> the runs each carried, by
    today's scenarios (for results.json saved before boot_runs)."""
    by_key = {s.key: s for s in known}
    scs = [by_key[k] for k in data.get("scenarios", []) if k in by_key]
    out: dict[str, list[str]] = {}
    for b in boots(scs):
        out.setdefault(b.description, b.runs)
    return out


def progress(j: int, every: list[Boot], scs: list[Scenario], clock: benchtime.Clock) -> str:
    """Before boot j of every: which boot and scenarios of how many, and the
    time the run's boots have left by estimate."""
    order = {sc.key: n for n, sc in enumerate(scs, 1)}
    mine = sorted({order[sc.key] for sc, _ in every[j].todo})
    left = clock.left([b.runs for b in every[j:]])
    return (f"boot {j + 1} of {len(every)}, scenario{'s' if len(mine) > 1 else ''} "
            f"{', '.join(map(str, mine))} of {len(scs)}; about {benchtime.minutes(left)} "
            "of boots left")


def plan_text(scs: list[Scenario], known: list[Scenario]) -> str:
    """make bench's plan without running it: kernels, boots and the time
    they take by the runs saved in results/."""
    every = boots(scs)
    clock = benchtime.Clock(benchtime.history(lambda d: described(d, known)))
    built = benchtime.builds()
    lines = [f"{len(scs)} scenarios, {len(every)} boots"]
    for sc in scs:
        mine = [benchtime.run_name(sc, side) for b in every for s, side in b.todo if s is sc]
        lines.append(f"  {sc.key}: {len(mine)} runs in boots, about "
                     f"{benchtime.minutes(sum(map(clock.run, mine)))}")
    warm = cold = 0.0
    for arch in sorted({sc.arch for sc in scs}):
        for k in kernels(boot_plan([s for s in scs if s.arch == arch])):
            name = build_name(arch, (k[0], "", "", k[1], ""))
            fast = benchtime.warm_build(name, built)
            slow = max(built.get(name, [fast]))
            warm, cold = warm + fast, cold + slow
            lines.append(f"kernel {name}: warm about {fast:.0f} s; slowest recorded {slow:.0f} s")
    boots_s = clock.left([b.runs for b in every])
    lines.append(f"boots: about {benchtime.minutes(boots_s)} by earlier runs; with the kernel "
                 f"builds: {benchtime.minutes(boots_s + warm)} warm, "
                 f"{benchtime.minutes(boots_s + cold)} at their slowest recorded (the "
                 "selftests' build apart)")
    return "\n".join(lines) + "\n"


def run_qemu(scs: list[Scenario], known: list[Scenario]) -> Results:
    """scs in QEMU; known: every scenario of bench/, to read the saved runs
    the time left is estimated from."""
    res = Results()
    every = boots(scs)
    clock = benchtime.Clock(benchtime.history(lambda d: described(d, known)))
    say(f"bench: {len(scs)} scenarios in {len(every)} boots, about "
        f"{benchtime.minutes(clock.left([b.runs for b in every]))} of boots by earlier runs "
        "(kernel builds apart)")
    for arch in sorted({sc.arch for sc in scs}):
        prof = profile.load(arch)
        mine = [s for s in scs if s.arch == arch]
        plan = boot_plan(mine)
        builds = {k: Build(prof, k[0], debug=False, extra=k[1]) for k in kernels(plan)}
        for b in builds.values():
            t0 = time.monotonic()
            buildcache.build_kernel(b)
            res.phases.append((f"build {b.name}", time.monotonic() - t0, 0))
        # One set of selftest binaries for every kernel, from the series: the
        # kernel (or its command line) is what is compared, and the series may
        # add test options. They need the patched tree's headers, not its kernel.
        tests_of = builds.get(TESTS_OF) or Build(prof, TESTS_OF[0], False, TESTS_OF[1])
        if TESTS_OF not in builds:
            t0 = time.monotonic()
            kernel.headers(tests_of)
            res.phases.append((f"headers {tests_of.name}", time.monotonic() - t0, 0))
        t0 = time.monotonic()
        selftests.build(tests_of)
        res.phases.append((f"selftests {tests_of.name}", time.monotonic() - t0, 0))
        files = sorted({shlex.split(side.command)[0] for s in mine for side in s.sides})
        repeats = max(s.repeats for s in mine)
        for j, boot in enumerate(every):
            if boot.arch != arch:
                continue
            r, i, todo = boot.repeat, boot.index, boot.todo
            variant, cmdline, clk_name, config, cpu = boot.key
            b = builds[(variant, config)]
            initrd = initramfs.pack(b, files, [], {"bench": guest_script(todo)},
                                    paths.BASE_BUILD / f"initramfs-bench-{b.name}.cpio.gz",
                                    "bench/", selftests_of=tests_of)
            where = boot.description.removeprefix("boot ") + f" boot {r + 1}/{repeats}"
            log = paths.LOGS / f"bench-{b.name}-{i}-{r + 1}.log"
            budget = BOOT_OVERHEAD + sum(s.timeout + 5 for s, _ in todo)
            say(f"bench {progress(j, every, scs, clock)}")
            say(f"bench {where}: " + ", ".join(f"{s.name} ({side.label})" for s, side in todo)
                + f" (log {log})")
            clk = scenarios.CLOCKS[clk_name]
            argv = prof.qemu_argv(b.image, initrd, f"lab.boot=bench {cmdline}".strip(),
                                  clk.qemu_args, clk.smp, cpu=cpu)
            con = qemu.run(argv, budget, log, markers.DONE)
            res.phases.append((f"boot {where}", con.seconds, con.peak_rss_kib))
            res.boot_runs[f"boot {where}"] = boot.runs
            clock.record(boot.runs, con.seconds)
            sections = split_console(con.lines)
            for s, side in todo:
                out, rc = sections.get(section(s, side), (None, None))
                record_run(res, s, side.label, out, rc, f"{where}, {con.outcome}, log {log}")
    return res


def write(scs: list[Scenario], res: Results, out: Path,
          sides: tuple[str, ...] | None = None) -> str:
    """report.md, results.json (with each scenario's sides, the baseline
    first, for the index) and change.png in out."""
    out.mkdir(parents=True, exist_ok=True)
    text = benchreport.render(scs, res, sides)
    (out / "results.json").write_text(json.dumps(
        {"base": paths.BASE, "scenarios": [s.key for s in scs],
         "sides": {s.key: list(sides or s.labels) for s in scs}, **res.to_json()},
        indent=1) + "\n")
    (out / "report.md").write_text(text)
    benchplot.draw(benchplot.bars(scs, res, sides), out / "change.png")
    return text


def rewrite(run: Path, known: list[Scenario]) -> str:
    """report.md and change.png of a saved run again, from its results.json,
    with today's report code and the scenarios of bench/ (known): a run's
    figures stay as measured, what the report says of them follows the code."""
    data = json.loads((run / "results.json").read_text())
    by_key = {s.key: s for s in known}
    scs = [by_key[k] for k in data.get("scenarios", []) if k in by_key]
    sides = ("A", "B") if run.name.startswith("compare-") else None
    res = Results.from_json(data)
    text = benchreport.render(scs, res, sides)
    (run / "report.md").write_text(text)
    benchplot.draw(benchplot.bars(scs, res, sides), run / "change.png")
    return text
