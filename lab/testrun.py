"""make test, per arch: build, boot each curated boot, account every test.

Every test of the curated list ends up as one KTAP line: its result from the
guest, "SKIP <reason>" when the list says it cannot run under TCG, or
"not ok ... not run" when the guest never got to it. A boot also fails on a
kernel splat (named with the test that was running), on a missing /dev/kvm
and on a guest that panicked or had to be killed.
"""
from dataclasses import dataclass, field
from pathlib import Path

from lab import buildcache, console, initramfs, ktap, lanes, markers, paths, qemu, selftests, testlist
from lab.kernel import Build
from lab.profile import Profile
from lab.progress import say

# Seconds a boot may take beyond its tests' timeouts (kernel boot under TCG
# takes ~2 s; the rest is slack for a loaded host).
BOOT_OVERHEAD = 90
DONE = markers.DONE


@dataclass
class BootReport:
    label: str                       # e.g. x86_64/tdp
    rows: list = field(default_factory=list)      # [(label, ktap.Result)]
    problems: list = field(default_factory=list)  # one-line reasons the boot failed
    notes: list = field(default_factory=list)     # what happened without failing it
    log: str = ""
    seconds: float = 0.0
    peak_rss_kib: int = 0
    cpu_seconds: float = 0.0         # QEMU's CPU time: how much of the host a boot used


def judge_runs(tl: testlist.TestList, label: str, runs: list) -> tuple:
    """(result, note) of one test from its runs in the guest, which runs a
    failed test once more: a known emulation flake ([[flaky]]) followed by a
    pass is a flaky pass, with a note that keeps the failure; any other
    failure stands, and says what the second run did."""
    first = runs[0].result
    if not first.failed:
        return first, ""
    if len(runs) == 1:
        return ktap.Result(first.name, first.status, runs[0].why()), ""
    again = runs[1].result
    flake = tl.known_flake(runs[0])
    if flake and not again.failed:
        why = runs[0].why() or first.status
        return (ktap.Result(first.name, ktap.FLAKY, f"{why}, then passed when run again"),
                f"{label}: failed ({why}) and passed when run again; a known emulation "
                f"flake: {flake.why}\n  first run's last lines:\n{runs[0].tail()}")
    return (ktap.Result(first.name, first.status,
                        f"{runs[0].why()}; run again: {runs[1].why() or again.status}".lstrip("; ")),
            "")


def account(tl: testlist.TestList, boot: str, runs: dict, why_missing: str) -> tuple:
    """(rows, notes, problems): one KTAP row per test of the boot."""
    rows, notes, problems = [], [], []
    for t in tl.tests_for(boot):
        label = f"{tl.arch}/{boot}: {t.name}"
        if t.skip:
            r = ktap.Result(t.basename, ktap.SKIP, t.skip)
        elif t.basename not in runs:
            r = ktap.Result(t.basename, ktap.NOT_RUN, why_missing)
        else:
            r, note = judge_runs(tl, label, runs[t.basename])
            if note:
                notes.append(note)
            if t.must_run and r.status == ktap.SKIP:
                r = ktap.Result(t.basename, ktap.FAIL, "skipped, but the list says it must run")
            elif r.failed:
                problems.append(f"{label}: {r.detail or r.status}; last lines of its (first) "
                                f"run:\n{runs[t.basename][0].tail()}")
        rows.append((label, r))
    return rows, notes, problems


def merge_runs(earlier: dict, later: dict) -> dict:
    return {name: earlier.get(name, []) + later.get(name, [])
            for name in dict.fromkeys([*earlier, *later])}


def judge_boot(tl: testlist.TestList, boot: str, seen: console.Reading, log,
               earlier: dict | None = None) -> BootReport:
    """earlier: the runs of a first boot that this one resumed."""
    con = seen.con
    rep = BootReport(f"{tl.arch}/{boot}", log=str(log), seconds=con.seconds,
                     peak_rss_kib=con.peak_rss_kib, cpu_seconds=con.cpu_seconds)
    if con.outcome == qemu.KILLED:
        rep.problems.append(f"{rep.label}: guest did not finish within its budget and was "
                            f"killed after {con.seconds:.0f} s; last console lines:\n{con.tail()}")
        missing = "guest killed by the host watchdog"
    elif con.outcome == qemu.EXITED_EARLY:
        rep.problems.append(f"{rep.label}: guest ended before its tests did (exit "
                            f"{con.returncode}); last console lines:\n{con.tail()}")
        missing = "guest ended early"
    else:
        missing = "no result in the console"
    if seen.kvm_missing:
        rep.problems.append(f"{rep.label}: /dev/kvm is missing in the guest: KVM did not "
                            f"initialise (see {log})")
    for s in seen.splats:
        ctx = "\n".join("    | " + c for c in s.context)
        rep.problems.append(f"{rep.label}: kernel splat while {s.test} ran: {s.line}\n{ctx}")
    rows, notes, problems = account(tl, boot, merge_runs(earlier or {}, seen.runs),
                                    missing)
    rep.rows = rows
    rep.notes += notes
    rep.problems += problems
    return rep


def _progress(label: str):
    def on_line(line: str):
        name = ktap.header_test(line)
        if name:
            say(f"  {label}: {name} ...")
            return
        if ktap.clean(line).startswith(markers.RETRY + " "):
            say(f"  {label}: {ktap.clean(line).split()[-1]} failed; running it once more")
            return
        r = ktap.parse_result(line)
        if r:
            say(f"  {label}: {r.name}: {r.status}" + (f" ({r.detail})" if r.detail else ""))
    return on_line


def unexplained_end(seen: console.Reading) -> bool:
    """The guest was running tests and QEMU exited without a word from the
    kernel: no panic, no splat (e.g. a TCG fault of the emulator, or a
    triple fault, which -no-reboot turns into a clean exit)."""
    return (seen.con.outcome == qemu.EXITED_EARLY and seen.booted and not seen.panicked
            and not seen.splats)


def known_crash(tl: testlist.TestList, seen: console.Reading) -> testlist.Flaky | None:
    """The [[flaky]] crash entry that explains how the guest ended: its
    kernel panicked while a test ran, every splat came in that test, and the
    entry's regex matches a console line of it. None for any other end."""
    if seen.con.outcome != qemu.EXITED_EARLY or not seen.panicked:
        return None
    lines = seen.lines
    starts = [i for i, ln in enumerate(lines) if ktap.header_test(ln)]
    if not starts:
        return None
    running = ktap.header_test(lines[starts[-1]])
    if any(s.test != running for s in seen.splats):
        return None
    return tl.known_crash(lines[starts[-1]:])


def resume_point(tl: testlist.TestList, boot: str, seen: console.Reading) -> int:
    """1-based index (lab.from=) of the first runnable test without a result."""
    done = seen.runs
    for n, t in enumerate(initramfs.runnable(tl, boot), 1):
        if t.basename not in done:
            return n
    return 0


def boot_argv(b: Build, initrd, boot: testlist.Boot, extra: str = "") -> list[str]:
    """QEMU's command line for one boot of the list (extra: e.g. lab.from=)."""
    return b.profile.qemu_argv(b.image, initrd,
                               f"lab.boot={boot.name} {boot.cmdline} {extra}".strip(),
                               cpu=boot.cpu)


def _boot_once(b: Build, tl: testlist.TestList, initrd, boot: testlist.Boot, label: str,
               extra: str, log) -> qemu.Console:
    argv = boot_argv(b, initrd, boot, extra)
    say(f"boot {label}: {boot.cmdline or '(default command line)'} {extra}".rstrip()
        + (f" -cpu {boot.cpu}" if boot.cpu else "")
        + f" (budget {tl.budget(boot.name, BOOT_OVERHEAD)} s, log {log})")
    return qemu.run(argv, tl.budget(boot.name, BOOT_OVERHEAD), log, DONE,
                    on_line=_progress(label))


def run_boot(b: Build, tl: testlist.TestList, initrd, boot: testlist.Boot,
             log_suffix: str = "") -> BootReport:
    """One boot of the list. If the guest ends without a kernel message, or
    with a crash that a [[flaky]] crash entry names, while tests remain, the
    rest run once more in a second boot, starting with the test that was
    running: a reproducible failure fails there too (a second crash is a
    splat like any other), and the first ending stays in the report as a
    note either way."""
    label = f"{b.profile.arch}/{boot.name}"
    log = paths.LOGS / f"boot-{b.name}-{boot.name}{log_suffix}.log"
    seen = console.read(_boot_once(b, tl, initrd, boot, label, "", log))
    con = seen.con
    rep = judge_boot(tl, boot.name, seen, log)
    crash = known_crash(tl, seen)
    start = resume_point(tl, boot.name, seen) if unexplained_end(seen) or crash else 0
    if start:
        rest = initramfs.runnable(tl, boot.name)[start - 1].name
        how = (f"the guest kernel crashed, a known emulation flake ({crash.why})" if crash
               else f"QEMU exited (code {con.returncode}) without a kernel message")
        note = (f"{label}: after {con.seconds:.0f} s {how}; tests from {rest} on ran in a "
                f"second boot. Last console lines of the first (log {log}):\n"
                f"{con.tail(30 if crash else 10)}")
        say(f"boot {label}: {'known crash' if crash else con.outcome + ' without a kernel message'}"
            f"; resuming at {rest}")
        log2 = paths.LOGS / f"boot-{b.name}-{boot.name}{log_suffix}-resumed.log"
        con2 = _boot_once(b, tl, initrd, boot, label, f"lab.from={start}", log2)
        rep2 = judge_boot(tl, boot.name, console.read(con2), log2, earlier=seen.runs)
        rep.rows, rep.problems, rep.notes = rep2.rows, rep2.problems, [note, *rep2.notes]
        rep.seconds += con2.seconds
        rep.peak_rss_kib = max(rep.peak_rss_kib, con2.peak_rss_kib)
        rep.cpu_seconds += con2.cpu_seconds
        con = con2
    say(f"boot {label}: {con.outcome} after {rep.seconds:.0f} s, QEMU peak RSS "
        f"{rep.peak_rss_kib >> 10} MiB, {rep.cpu_seconds / max(rep.seconds, 1):.1f} cores busy")
    return rep


def panic_check(b: Build, initrd) -> BootReport:
    """Boot with an init that exits, and check the harness reports the panic
    instead of waiting: proof, on the real kernel, that a crashed guest ends."""
    label = f"{b.profile.arch}/harness"
    argv = b.profile.qemu_argv(b.image, initrd, "lab.boot=panic-check lab.panic=1")
    log = paths.LOGS / f"boot-{b.name}-panic-check.log"
    con = qemu.run(argv, BOOT_OVERHEAD, log, DONE)
    rep = BootReport(label, log=str(log), seconds=con.seconds, peak_rss_kib=con.peak_rss_kib)
    saw_panic = console.read(con).panicked
    ok = con.outcome == qemu.EXITED_EARLY and saw_panic
    detail = f"{con.outcome} after {con.seconds:.0f} s" + ("" if saw_panic else ", no panic seen")
    rep.rows.append((f"{label}: init panic is reported, not waited on",
                     ktap.Result("panic-check", ktap.PASS if ok else ktap.FAIL,
                                 "" if ok else detail)))
    if not ok:
        rep.problems.append(f"{label}: panic check: {detail}; log: {log}")
    say(f"boot {label}: panic check {detail}")
    return rep


def test_build(prof: Profile, variant: str = "patched", debug: bool = True,
               config: str = "") -> Build:
    """The test kernel, or the one a boot's config names (testlist.Boot)."""
    return Build(prof, variant, debug, (config,) if config else ())


def for_variant(tl: testlist.TestList, variant: str, installed: set[str]) -> testlist.TestList:
    """The list a variant's selftests build runs. The vanilla kernel's
    selftests lack the tests the series adds: they are reported as skipped,
    "not in this variant", and every other test runs, so that the pass sets
    of vanilla and patched compare boot by boot. The patched build must have
    every test of the list: one it lacks is a mistake in the list or the
    build, which initramfs.pack names."""
    return tl.in_build(installed) if variant == "vanilla" else tl


def available(install: Path) -> set[str]:
    """What a boot can run: the files of the install's kvm collection and the
    harness's own tests (initramfs.HARNESS_TESTS), which every build has."""
    return selftests.installed(install) | initramfs.harness_tests()


def initramfs_path(b: Build) -> Path:
    """Where build_arch writes the initramfs of b's boots (make lava's jobs
    deploy it)."""
    return paths.BASE_BUILD / f"initramfs-{b.name}.cpio.gz"


def build_arch(prof: Profile, tl: testlist.TestList, variant: str = "patched",
               debug: bool = True, config: str = "", dest: Path | None = None,
               selftests_src: Path | None = None) -> tuple[Build, Path, testlist.TestList]:
    """The kernel, selftests and initramfs that every boot of the arch uses
    (with config: the kernel of the boots that name it, with its own
    selftests build; with selftests_src, the selftests of that tree), and
    the list its boots run (for_variant)."""
    b = test_build(prof, variant, debug, config)
    with lanes.BUILD_LOCK:
        buildcache.build_kernel(b)
        install = buildcache.build_selftests(b, src=selftests_src)
        tl = for_variant(tl, variant, available(install))
        initrd = initramfs.build(b, tl, dest or initramfs_path(b), install)
    return b, initrd, tl


def build_kernel(prof: Profile, variant: str, debug: bool, config: str) -> Build:
    """Only the kernel of a boot's config: its boots use the initramfs of
    the arch's test build (the selftests need only the UAPI headers, which no
    config fragment changes)."""
    b = test_build(prof, variant, debug, config)
    with lanes.BUILD_LOCK:
        buildcache.build_kernel(b)
    return b
