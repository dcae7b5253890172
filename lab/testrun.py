"""make test, per arch: build, boot each curated boot, account every test.

Every test of the curated list ends up as one KTAP line: its result from the
guest, "SKIP <reason>" when the list says it cannot run under TCG, or
"not ok ... not run" when the guest never got to it. A boot also fails on a
kernel splat (named with the test that was running), on a missing /dev/kvm
and on a guest that panicked or had to be killed.
"""
import re
from dataclasses import dataclass, field

from lab import initramfs, kernel, ktap, paths, qemu, selftests, splat, testlist
from lab.kernel import Build
from lab.profile import Profile
from lab.progress import say

# Seconds a boot may take beyond its tests' timeouts (kernel boot under TCG
# takes ~2 s; the rest is slack for a loaded host).
BOOT_OVERHEAD = 90
DONE = "LAB-DONE"


@dataclass
class BootReport:
    label: str                       # e.g. x86_64/tdp
    rows: list = field(default_factory=list)      # [(label, ktap.Result)]
    problems: list = field(default_factory=list)  # one-line reasons the boot failed
    log: str = ""
    seconds: float = 0.0
    peak_rss_kib: int = 0


def account(tl: testlist.TestList, boot: str, results: dict, why_missing: str) -> list:
    rows = []
    for t in tl.tests_for(boot):
        label = f"{tl.arch}/{boot}: {t.name}"
        if t.skip:
            r = ktap.Result(t.basename, ktap.SKIP, t.skip)
        else:
            r = results.get(t.basename) or ktap.Result(t.basename, ktap.NOT_RUN, why_missing)
            if t.must_run and r.status == ktap.SKIP:
                r = ktap.Result(t.basename, ktap.FAIL, "skipped, but the list says it must run")
        rows.append((label, r))
    return rows


def judge_boot(tl: testlist.TestList, boot: str, con: qemu.Console, log) -> BootReport:
    rep = BootReport(f"{tl.arch}/{boot}", log=str(log), seconds=con.seconds,
                     peak_rss_kib=con.peak_rss_kib)
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
    if any(ln.startswith("LAB-KVM missing") for ln in con.lines):
        rep.problems.append(f"{rep.label}: /dev/kvm is missing in the guest: KVM did not "
                            f"initialise (see {log})")
    for s in splat.scan(con.lines):
        ctx = "\n".join("    | " + c for c in s.context)
        rep.problems.append(f"{rep.label}: kernel splat while {s.test} ran: {s.line}\n{ctx}")
    rep.rows = account(tl, boot, ktap.parse(con.lines), missing)
    return rep


def _progress(label: str):
    def on_line(line: str):
        name = ktap.header_test(line)
        if name:
            say(f"  {label}: {name} ...")
            return
        r = ktap.parse_result(line)
        if r:
            say(f"  {label}: {r.name}: {r.status}" + (f" ({r.detail})" if r.detail else ""))
    return on_line


def run_boot(b: Build, tl: testlist.TestList, initrd, boot: testlist.Boot) -> BootReport:
    label = f"{b.profile.arch}/{boot.name}"
    argv = b.profile.qemu_argv(b.image, initrd, f"lab.boot={boot.name} {boot.cmdline}".strip())
    budget = tl.budget(boot.name, BOOT_OVERHEAD)
    log = paths.LOGS / f"boot-{b.name}-{boot.name}.log"
    say(f"boot {label}: {boot.cmdline or '(default command line)'} "
        f"(budget {budget} s, log {log})")
    con = qemu.run(argv, budget, log, DONE, on_line=_progress(label))
    rep = judge_boot(tl, boot.name, con, log)
    say(f"boot {label}: {con.outcome} after {con.seconds:.0f} s, QEMU peak RSS "
        f"{con.peak_rss_kib >> 10} MiB")
    return rep


def panic_check(b: Build, initrd) -> BootReport:
    """Boot with an init that exits, and check the harness reports the panic
    instead of waiting: proof, on the real kernel, that a crashed guest ends."""
    label = f"{b.profile.arch}/harness"
    argv = b.profile.qemu_argv(b.image, initrd, "lab.boot=panic-check lab.panic=1")
    log = paths.LOGS / f"boot-{b.name}-panic-check.log"
    con = qemu.run(argv, BOOT_OVERHEAD, log, DONE)
    rep = BootReport(label, log=str(log), seconds=con.seconds, peak_rss_kib=con.peak_rss_kib)
    saw_panic = any(re.search(r"Kernel panic", ln) for ln in con.lines)
    ok = con.outcome == qemu.EXITED_EARLY and saw_panic
    detail = f"{con.outcome} after {con.seconds:.0f} s" + ("" if saw_panic else ", no panic seen")
    rep.rows.append((f"{label}: init panic is reported, not waited on",
                     ktap.Result("panic-check", ktap.PASS if ok else ktap.FAIL,
                                 "" if ok else detail)))
    if not ok:
        rep.problems.append(f"{label}: panic check: {detail}; log: {log}")
    say(f"boot {label}: panic check {detail}")
    return rep


def run_arch(prof: Profile, variant: str = "patched", debug: bool = True,
             boots: list[str] | None = None) -> list[BootReport]:
    tl = testlist.load(prof.arch)
    b = Build(prof, variant, debug)
    kernel.build(b)
    selftests.build(b)
    initrd = initramfs.build(b, tl, paths.BUILD / f"initramfs-{b.name}.cpio.gz")
    reports = [panic_check(b, initrd)]
    for boot in tl.boots:
        if boots and boot.name not in boots:
            continue
        reports.append(run_boot(b, tl, initrd, boot))
    return reports
