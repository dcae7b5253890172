"""make test's whole run: make check, then each arch's builds and boots,
as parts of lanes.run, reported in the order of the lists.

An arch is one build (kernel, selftests, initramfs, and the panic check),
the kernel of each config its selected boots name, and one part per boot;
testrun does the building and booting, this module only orders them.
"""
import difflib

from lab import check, deb, ktap, lanes, paths, profile, testlist, testrun
from lab.progress import LabError, say

# What an arch's build weighs against its boots when make test orders the
# parts (the boots weigh the sum of their tests' timeouts, in seconds): about
# what a warm kernel and selftests build takes beside another lane.
BUILD_WEIGHT = 180


def check_report() -> testrun.BootReport:
    rep = testrun.BootReport("check")
    try:
        found = check.run()
        rep.rows, rep.problems = found.rows, found.problems
    except LabError as e:
        rep.rows.append(("check: make check ran", ktap.Result("check", ktap.FAIL, str(e))))
        rep.problems.append(f"check: {e}")
    return rep


def boot_names(bases: list[str], arches: list[str]) -> dict[str, dict[str, list[str]]]:
    """base -> arch -> the boots of testlists/<base>/<arch>.toml, for the
    lists that exist."""
    out: dict[str, dict[str, list[str]]] = {}
    for b in bases:
        d = paths.TESTLISTS.parent / b
        out[b] = {a: [bt.name for bt in testlist.load(a, d).boots]
                  for a in arches if (d / f"{a}.toml").is_file()}
    return out


def _alternatives(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else "{" + ",".join(names) + "}"


def plan_boots(named: list[str] | None, base: str, run_bases: list[str],
               have: dict[str, dict[str, list[str]]]) -> tuple[dict, list[str]]:
    """make test TEST_BOOT=...: per arch of base, the named boots its list
    has (None: the list's default boots, when none is named), and the lines
    that say what is left out. An arch whose list has none of them is left
    out, and so is the whole base when no list of it has any (an empty plan):
    make test runs each base of run_bases, and a boot may be one base's
    only. A boot that no list of run_bases has is an error; have (base ->
    arch -> boot names, for run_bases and any other base) says which other
    base has it."""
    mine = have.get(base, {})
    if not named:
        return {a: None for a in mine}, []
    named = list(dict.fromkeys(named))

    def bases_with(names, among):
        return [b for b in among if any(n in boots for n in names
                                        for boots in have.get(b, {}).values())]

    in_run = {n for b in run_bases for boots in have.get(b, {}).values() for n in boots}
    unknown = [n for n in named if n not in in_run]
    if unknown:
        arches = sorted({a for b in run_bases for a in have.get(b, {})}) or ["<arch>"]
        elsewhere = bases_with(unknown, [b for b in have if b not in run_bases])
        near = [m for n in unknown for m in difflib.get_close_matches(n, sorted(in_run), n=1)]
        raise LabError(
            f"testlists/{_alternatives(run_bases)}/{_alternatives(arches)}.toml: no boot "
            f"{', '.join(unknown)}"
            + (f"; base {', '.join(elsewhere)} has it (BASE={elsewhere[0]})" if elsewhere else "")
            + (f"; did you mean {', '.join(near)}?" if near else "")
            + " (make list BASE=<base> shows a base's boots)")
    plan = {a: [n for n in named if n in boots] for a, boots in mine.items()}
    plan = {a: boots for a, boots in plan.items() if boots}
    absent = [n for n in named if not any(n in boots for boots in plan.values())]
    has = bases_with(absent, [b for b in run_bases if b != base])
    why = (f"no list of testlists/{base}/ has boot {', '.join(absent)}"
           + (f" (base {', '.join(has)} has it)" if has else ""))
    if not plan:
        return {}, [f"test: base {base} skipped: {why}"]
    notes = [f"test: base {base}: {why}: not run here"] if absent else []
    notes += [f"test: {a} skipped: testlists/{base}/{a}.toml has none of the boots "
              f"{', '.join(named)}" for a in mine if a not in plan]
    return plan, notes


def arch_parts(prof: profile.Profile, tl: testlist.TestList, boots: list[str] | None,
               full: bool, variant: str, debug: bool) -> list[lanes.Part]:
    """The arch's build (with the panic check), the kernel of each config
    the selected boots name (after it: their boots use its initramfs), then
    one part per boot; a boot waits for its kernel and may run in either
    lane."""
    arch = prof.arch
    built = {}
    selected = tl.selected(boots, full)
    configs = list(dict.fromkeys(bt.config for bt in selected if bt.config))

    def build() -> list:
        try:
            built["b"], built["initrd"], built["list"] = testrun.build_arch(
                prof, tl, variant, debug)
        except LabError as e:
            rep = testrun.BootReport(f"{arch}/build", problems=[str(e)])
            rep.rows.append((f"{arch}: build, selftests and initramfs",
                             ktap.Result("build", ktap.FAIL, "see the error above")))
            say(f"error: {e}")
            return [rep]
        return [testrun.panic_check(built["b"], built["initrd"])]

    def build_config(config: str) -> list:
        if "b" not in built:
            return []
        try:
            built[config] = testrun.build_kernel(prof, variant, debug, config)
        except LabError as e:
            say(f"error: {e}")
            rep = testrun.BootReport(f"{arch}/build-{config}", problems=[str(e)])
            rep.rows.append((f"{arch}: build of the kernel with configs/{config}.config",
                             ktap.Result("build", ktap.FAIL, "see the error above")))
            return [rep]
        return []

    def package() -> list:
        rep = testrun.BootReport(f"{arch}/deb")
        label = f"{arch}: make deb CONFIG=test packages make test's kernel"
        try:
            with lanes.BUILD_LOCK:
                debs = deb.build(arch, "test")
            rep.rows.append((label, ktap.Result("deb", ktap.PASS,
                                                ", ".join(p.name for p in debs))))
        except LabError as e:
            say(f"error: {e}")
            rep.problems.append(str(e))
            rep.rows.append((label, ktap.Result("deb", ktap.FAIL, "see the error above")))
        return [rep]

    def boot(bt: testlist.Boot) -> list:
        # Without a build there is nothing to boot: the build's row fails.
        kern = bt.config or "b"
        if kern not in built or "initrd" not in built:
            return []
        return [testrun.run_boot(built[kern], built["list"], built["initrd"], bt)]

    # FULL=1: the packages of make test's kernel (make deb CONFIG=test), a
    # build of its own: x86_64's took 2.5 min from a fresh output directory
    # with its objects in ccache on this 2-core machine, past the minute the
    # default run can spare (docs/timings.md).
    packaged = full and variant == "patched" and debug
    return ([lanes.Part(arch, build, BUILD_WEIGHT)]
            + [lanes.Part(f"{arch}+{c}", lambda c=c: build_config(c), BUILD_WEIGHT, (arch,))
               for c in configs]
            + ([lanes.Part(f"{arch}+deb", package, BUILD_WEIGHT, (arch,))] if packaged else [])
            + [lanes.Part(f"{arch}/{bt.name}", lambda bt=bt: boot(bt), tl.test_seconds([bt]),
                          (f"{arch}+{bt.config}",) if bt.config else (arch,))
               for bt in selected])


def run(plan: dict[str, list[str] | None], full: bool, variant: str, debug: bool,
        with_check: bool, jobs: int) -> list[testrun.BootReport]:
    """plan: arch -> its boots to run (None: the list's default, or all with
    full), as plan_boots says."""
    # make check first, whatever its weight: a broken patch is known in
    # minutes, and its builds run while the first arch's build holds
    # BUILD_LOCK. Then each part when its turn comes (lanes.run).
    parts = [lanes.Part("check", lambda: [check_report()], float("inf"))] if with_check else []
    lists = {a: testlist.load(a) for a in plan}
    # At most this many parts at once: check, and every boot of every arch.
    most = len(parts) + sum(max(1, len(tl.selected(plan[a], full))) for a, tl in lists.items())
    scale = lanes.timeout_scale(jobs, most)
    for a, tl in lists.items():
        parts += arch_parts(profile.load(a), tl.scaled(scale), plan[a], full, variant, debug)
    if scale > 1:
        say(f"test: {', '.join(lanes.start_order(parts))}, {jobs} at a time; "
            f"test timeouts x{scale}, as the lanes share the cores")
    done = lanes.run(parts, jobs)
    # Reported in the order of the list, whatever order they ran in.
    return [r for p in parts for r in done[p.name]]
