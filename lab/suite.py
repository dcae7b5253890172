"""make test's whole run: make check, then each arch's builds and boots,
as parts of lanes.run, reported in the order of the lists.

An arch is one build (kernel, selftests, initramfs, and the panic check),
the kernel of each config its selected boots name, and one part per boot;
testrun does the building and booting, this module only orders them.
"""
from lab import check, ktap, lanes, profile, testlist, testrun
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

    def boot(bt: testlist.Boot) -> list:
        # Without a build there is nothing to boot: the build's row fails.
        kern = bt.config or "b"
        if kern not in built or "initrd" not in built:
            return []
        return [testrun.run_boot(built[kern], built["list"], built["initrd"], bt)]

    return ([lanes.Part(arch, build, BUILD_WEIGHT)]
            + [lanes.Part(f"{arch}+{c}", lambda c=c: build_config(c), BUILD_WEIGHT, (arch,))
               for c in configs]
            + [lanes.Part(f"{arch}/{bt.name}", lambda bt=bt: boot(bt), tl.test_seconds([bt]),
                          (f"{arch}+{bt.config}",) if bt.config else (arch,))
               for bt in selected])


def run(arches: list[str], boots: list[str] | None, full: bool, variant: str, debug: bool,
        with_check: bool, jobs: int) -> list[testrun.BootReport]:
    # make check first, whatever its weight: a broken patch is known in
    # minutes, and its builds run while the first arch's build holds
    # BUILD_LOCK. Then each part when its turn comes (lanes.run).
    parts = [lanes.Part("check", lambda: [check_report()], float("inf"))] if with_check else []
    lists = {a: testlist.load(a) for a in arches}
    # At most this many parts at once: check, and every boot of every arch.
    most = len(parts) + sum(max(1, len(tl.selected(boots, full))) for tl in lists.values())
    scale = lanes.timeout_scale(jobs, most)
    for a, tl in lists.items():
        parts += arch_parts(profile.load(a), tl.scaled(scale), boots, full, variant, debug)
    if scale > 1:
        say(f"test: {', '.join(lanes.start_order(parts))}, {jobs} at a time; "
            f"test timeouts x{scale}, as the lanes share the cores")
    done = lanes.run(parts, jobs)
    # Reported in the order of the list, whatever order they ran in.
    return [r for p in parts for r in done[p.name]]
