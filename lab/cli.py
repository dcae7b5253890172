"""python3 -m lab <command>: the thin command line the Makefile calls."""
import argparse
import errno
import os
import shutil
import sys
from pathlib import Path

from lab import (base, bench, datafile, deb, deps, devloop, kernel, ksftbundle, lava, lavarun, mail,
                 passsets,
                 paths, profile, report, resultsindex, scenarios, selftests, suite, testlist, topics, tree,
                 variants)
from lab.progress import LabError, say


def cmd_base(args):
    src, label = base.source()
    print(f"{label}: {src}")


def cmd_bases(args):
    for name in base.names():
        if args.long:
            b = base.load(name)
            default = " (default)" if name == paths.DEFAULT_BASE else ""
            print(f"{name}{default}: {b.label}, {b.where}")
        else:
            print(name)


def cmd_tree(args):
    src, label = base.source()
    tree.old_tree(args.force)
    tree.make_tree(src, label, force=args.force)


def cmd_topics(args):
    print(topics.render(topics.compare(paths.ROOT / "patches", base.names())), end="")


def cmd_export(args):
    if not (paths.TREE / ".git").exists():
        raise LabError(f"{paths.TREE} does not exist: nothing to export (make tree)")
    changed = tree.export(paths.TREE, paths.PATCHES)
    where = datafile.origin(paths.PATCHES)
    say("export: " + (f"wrote {', '.join(changed)} in {where}/" if changed
                      else f"{where}/ already up to date"))


def _build(args) -> kernel.Build:
    if args.variant not in kernel.VARIANTS:
        variants.get(args.variant)          # an unknown name, said with the known ones
    return kernel.Build(profile.load(args.arch), args.variant, args.debug)


def cmd_kernel(args):
    kernel.build(_build(args))


def cmd_selftests(args):
    selftests.build(_build(args))


def cmd_deb(args):
    deb.build(args.arch, args.config)


def cmd_distro_config(args):
    for arch in args.arch or profile.arches():
        b, secs = deb.resolve(arch)
        say(f"distro-config {arch}: every option of {', '.join(f.name for f in b.fragments())} "
            f"is set in {b.out / '.config'} ({secs:.0f} s)")


def cmd_deps(args):
    if args.install:
        deps.install()
    else:
        lack = deps.missing()
        if lack:
            raise LabError("missing: " + ", ".join(f"{deps.describe(t)} (apt: {p})"
                                                   for t, p in lack)
                           + "; run make deps")
        say("deps: every tool is present")


def cmd_check(args):
    return report.show([suite.check_report()], "check")


def cmd_series(args):
    ident = mail.sender_identity()
    out = mail.make_series(args.topic, args.version, ident)
    print(f"{out}: send with git send-email {out}/*.patch (check first with --dry-run)")


def cmd_test(args):
    arches = args.arch or profile.arches()
    run_bases = list(dict.fromkeys(args.bases.replace(",", " ").split())) or [paths.BASE]
    if paths.BASE not in run_bases:
        raise LabError(f"--bases {args.bases!r} leaves out this base, {paths.BASE}")
    have = (suite.boot_names(list(dict.fromkeys(run_bases + base.names())), arches)
            if args.boot else {paths.BASE: {a: [] for a in arches}})
    plan, notes = suite.plan_boots(args.boot, paths.BASE, run_bases, have)
    for n in notes:
        say(n)
    if not plan:
        return 0
    say(f"test: base {paths.BASE} ({datafile.origin(paths.PATCHES)}/series, "
        f"{datafile.origin(paths.TESTLISTS)}/)")
    reports = suite.run(plan, args.full, args.variant, not args.no_debug, not args.no_check,
                        args.jobs)
    code = report.show(reports, "test", args.variant)
    if args.variant == "vanilla":
        # What the run is for: its pass sets beside the series' own.
        print(passsets.against_patched(passsets.from_summary(
            report.summary(reports, args.variant), "this run")), end="")
    return code


def cmd_passes(args):
    a, b = passsets.load(Path(args.a)), passsets.load(Path(args.b))
    if args.boot:
        unknown = [x for x in args.boot if x not in a.boots and x not in b.boots]
        if unknown:
            raise LabError(f"passes --boot {', '.join(unknown)}: neither run has it (boots: "
                           f"{', '.join(dict.fromkeys([*a.boots, *b.boots]))})")
        a, b = passsets.only(a, args.boot), passsets.only(b, args.boot)
    print(passsets.render(a, b), end="")


def cmd_run(args):
    rep = devloop.run(args.arch, args.boot, args.test, args.args, args.kernel_args,
                      args.selftests and Path(args.selftests), args.variant)
    return report.show([rep], "run")


def cmd_parse(args):
    rep = devloop.parse(Path(args.console), args.arch, args.boot, args.test)
    return report.show([rep], None)


def cmd_shell(args):
    return devloop.shell(args.arch, args.boot, args.kernel_args,
                         args.selftests and Path(args.selftests), args.variant)


def cmd_list(args):
    for a in args.arch or profile.arches():
        print(testlist.describe(testlist.load(a)), end="")


def cmd_lava(args):
    lava.write({"kernel": args.kernel_url, "rootfs": args.rootfs_url,
                "kselftest": args.kselftest_url})


def cmd_kselftest_tar(args):
    ksftbundle.make(args.arch, args.host or "")


def cmd_lava_run(args):
    if args.full:
        # make test FULL=1: the data file's boot, with what that run built,
        # beside that run; nothing if the run did not have the boot (TEST_ARCH=..).
        label = lavarun.load().full_boot
        if os.geteuid() != 0:
            # lava-run refuses other users; a full run elsewhere is not failed for it.
            say(f"lava-run: not root: {label} not run under LAVA (make lava-run as root runs it)")
            return 0
        d = lavarun.newest_run()
        if not d or label not in passsets.load(d).boots:
            say(f"lava-run: {label} (lab/lava/dispatcher.toml full_boot) is not in "
                f"{d or 'any make test run'}: not run under LAVA")
            return 0
        args.arch, args.boot = label.split("/", 1)
        args.no_build, args.against = True, str(d)
    if not args.boot:
        raise LabError("lava-run: name a boot (--boot; make lava-run BOOT=..)")
    rep = lavarun.run(args.arch, args.boot, build=not args.no_build)
    code = report.show([rep], "lava")
    # What the run is for: its pass set beside make test's for the boot
    # (--against's run, else the newest make test run of the boot here).
    d = Path(args.against) if args.against else lavarun.newest_with(rep.label)
    if not d:
        say(f"lava-run: no make test run of {rep.label} in {paths.RESULTS} to compare with "
            f"(AGAINST=<a results directory>)")
        return code
    local = passsets.only(passsets.load(d), [rep.label])
    if not local.boots:
        raise LabError(f"{d} has no boot {rep.label} to compare with")
    print(f"passes: {rep.label} compared with {d}, make test's run (A) and this LAVA run "
          f"(B)\n" + passsets.render(local, passsets.from_summary(
              report.summary([rep], "patched"), "this LAVA run")), end="")
    return code


def cmd_bench(args):
    known = scenarios.load_all()
    if not known:
        raise LabError(f"bench: base {paths.BASE} has no scenario yet "
                       f"({datafile.origin(paths.BENCH)}/<topic>.toml)")
    scs = scenarios.select(known, args.scenario, args.level)
    if args.plan:
        print(bench.plan_text(scs, known), end="")
        return 0
    say(f"bench: {len(scs)} scenario(s): {', '.join(s.key for s in scs)}")
    res = bench.run_qemu(scs, known)
    out = bench.out_dir("qemu")
    print(bench.write(scs, res, out), end="")
    say(f"bench: results in {out}; index {resultsindex.write()}")
    return 0


def cmd_bench_native(args):
    scs = [s for s in scenarios.select(scenarios.load_all(), args.scenario)
           if s.arch == profile.host_arch()]
    res = bench.run_native(scs, Path(args.kvm_selftests).resolve(), args.label)
    dest = bench.save_native(args.label, scs, res)
    say(f"bench-native: saved {dest}; compare two runs with make compare A=... B=...")


def cmd_compare(args):
    runs = [bench.load_native(name) for name in (args.a, args.b)]
    merged = bench.Results.compared(runs, ("A", "B"))
    keys = list(dict.fromkeys(runs[0]["scenarios"] + runs[1]["scenarios"]))
    known = {s.key: s for s in scenarios.load_all()}
    scs = [known[k] for k in keys if k in known]
    print(bench.write(scs, merged, bench.out_dir("compare"), ("A", "B")), end="")
    resultsindex.write()


def cmd_results_index(args):
    say(f"results-index: wrote {resultsindex.write()}")


def cmd_bench_report(args):
    known = scenarios.load_all()
    for run in args.run:
        if not (Path(run) / "results.json").is_file():
            raise LabError(f"bench-report: {run} holds no results.json of a bench run")
        bench.rewrite(Path(run), known)
        say(f"bench-report: wrote {Path(run) / 'report.md'} and change.png")
    say(f"bench-report: index {resultsindex.write()}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lab", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    p.add_argument("--base", help="the base to work on (bases/<name>.toml), as LAB_BASE "
                   f"says (make BASE=<name>); default {paths.DEFAULT_BASE}")
    sub.add_parser("base", help="fetch and verify the base tarball").set_defaults(fn=cmd_base)
    bs = sub.add_parser("bases", help="the bases, the default first (make test's order)")
    bs.add_argument("--long", action="store_true", help="with each one's package and suite")
    bs.set_defaults(fn=cmd_bases)
    sub.add_parser("topics", help="per topic, the bases that carry it and, per patch, "
                   "whether another base's version is the same change, a port (same "
                   "subject, or a retitled one patches/topics.toml pairs) or none; "
                   "patches/topics.toml says why a topic is on one base"
                   ).set_defaults(fn=cmd_topics)
    t = sub.add_parser("tree", help="build/<base>/linux = the base + patches/<base>/series")
    t.add_argument("--force", action="store_true", help="discard unexported work in the tree")
    t.set_defaults(fn=cmd_tree)
    sub.add_parser("export", help="write the tree's commits to patches/").set_defaults(fn=cmd_export)
    d = sub.add_parser("deps", help="check (or --install) the system tools")
    d.add_argument("--install", action="store_true",
                   help="apt-get install what is missing (and add the guests' dpkg arch)")
    d.set_defaults(fn=cmd_deps)
    bn = sub.add_parser("bench", help="the scenarios' sides in QEMU (vanilla vs patched "
                        "by default)")
    bn.add_argument("--level", choices=("quick", "default", "full"), default="default")
    bn.add_argument("--scenario", action="append", help="topic/name or name (default: all)")
    bn.add_argument("--plan", action="store_true", help="print the kernels, the boots and "
                    "their time by the runs saved in results/, and run nothing")
    bn.set_defaults(fn=cmd_bench)
    nat = sub.add_parser("bench-native", help="run the scenarios on this host's /dev/kvm")
    nat.add_argument("--label", required=True)
    nat.add_argument("--kvm-selftests", required=True,
                     help="directory of installed kvm selftests (the kvm/ of a kselftest install)")
    nat.add_argument("--scenario", action="append")
    nat.set_defaults(fn=cmd_bench_native)
    cmp_ = sub.add_parser("compare", help="report two saved native runs, A as the baseline")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    cmp_.set_defaults(fn=cmd_compare)
    ps = sub.add_parser("passes", help="two saved make test runs side by side, boot by boot: "
                        "each test's result in either, the differences marked (* ), the "
                        "counts per boot; e.g. a patched run and a vanilla one")
    ps.add_argument("a", help="a results directory, e.g. build/<base>/results/test-<time>")
    ps.add_argument("b", help="the other one")
    ps.add_argument("--boot", action="append", help="only this boot (e.g. x86_64/legacy; "
                    "again for more): a make lava-run run, of one boot, beside a make test run")
    ps.set_defaults(fn=cmd_passes)
    sub.add_parser("check", help="checkpatch, git am and quilt, each patch built alone"
                   ).set_defaults(fn=cmd_check)
    se = sub.add_parser("series", help="a send-ready folder for one topic")
    se.add_argument("--topic", required=True)
    se.add_argument("--version", type=int, default=1)
    se.set_defaults(fn=cmd_series)
    r = sub.add_parser("run", help="run some tests in one boot of the test kernel (make run)")
    r.add_argument("--arch", default="x86_64", choices=profile.arches())
    r.add_argument("--boot", help="a boot of testlists/<base>/<arch>.toml")
    r.add_argument("--test", required=True, help="test names, comma separated")
    r.add_argument("--args", help="the tests' arguments, in place of the list's")
    r.add_argument("--kernel-args", default="", help="added to the boot's command line")
    r.add_argument("--selftests", help="a kernel tree (e.g. a worktree of build/<base>/linux) "
                   "whose kvm selftests to run, built against the test kernel's headers")
    r.add_argument("--variant", default="patched",
                   help="the kernel: patched (make test's), vanilla or a variant of "
                   "bench/<base>/variants.toml, with its own selftests")
    r.set_defaults(fn=cmd_run)
    sh = sub.add_parser("shell", help="the test guest's console, every kvm selftest in "
                        "/kselftest/kvm (make shell)")
    sh.add_argument("--arch", default="x86_64", choices=profile.arches())
    sh.add_argument("--boot", help="a boot of testlists/<base>/<arch>.toml (default: its first)")
    sh.add_argument("--kernel-args", default="", help="added to the boot's command line")
    sh.add_argument("--selftests", help="as for run")
    sh.add_argument("--variant", default="patched", help="as for run")
    sh.set_defaults(fn=cmd_shell)
    pa = sub.add_parser("parse", help="judge a saved console log again with today's list, "
                        "[[flaky]] entries and splat scan: the same KTAP, exit 1 on a failure")
    pa.add_argument("console", help="a console log, e.g. "
                    "build/<base>/logs/boot-<build>-<boot>.log")
    pa.add_argument("--arch", choices=profile.arches(),
                    help="default: the arch whose QEMU or console device the log shows")
    pa.add_argument("--boot", help="default: the boot the log's LAB-BOOT line names")
    pa.add_argument("--test", help="only these tests, comma separated (a make run console)")
    pa.set_defaults(fn=cmd_parse)
    sub.add_parser("results-index", help="write results/README.md, the index of the saved "
                   "bench runs, from their results.json").set_defaults(fn=cmd_results_index)
    br = sub.add_parser("bench-report", help="write a saved bench run's report.md and "
                        "change.png again from its results.json, with today's report code")
    br.add_argument("run", nargs="+", help="a run directory, e.g. results/<date>/qemu-<time>")
    br.set_defaults(fn=cmd_bench_report)
    lv = sub.add_parser("lava", help="LAVA jobs from the lists, one per arch (QEMU) or "
                        "device and boot, in build/<base>/lava/")
    for k, what in (("kernel", "the device jobs' kernel image"),
                    ("rootfs", "their NFS root (tar.xz)"),
                    ("kselftest", "their kselftest install (tar.gz)")):
        lv.add_argument(f"--{k}-url", default="",
                        help=f"{what}; {{base}}, {{arch}} and {{build}} are replaced "
                        "(default: lab/lava/lava.toml's placeholder)")
    lv.set_defaults(fn=cmd_lava)
    kt = sub.add_parser("kselftest-tar", help="make test's kvm selftests of an arch as a "
                        "kselftest bundle, build/<base>/kselftest-<arch>[-<host>].tar.gz; "
                        "--host: the list of a [[host]] of the arch's test list")
    kt.add_argument("--arch", default="x86_64", choices=profile.arches())
    kt.add_argument("--host", help="a [[host]] of testlists/<base>/<arch>.toml (make list "
                    "shows them)")
    kt.set_defaults(fn=cmd_kselftest_tar)
    lr = sub.add_parser("lava-run", help="one boot's QEMU job (make lava's) run by "
                        "lava-dispatcher from Debian on this machine, as root; its results "
                        "as make test's KTAP and summary.json in build/<base>/results/lava-<time>/")
    lr.add_argument("--arch", default="x86_64", choices=profile.arches())
    lr.add_argument("--boot", help="a boot of testlists/<base>/<arch>.toml")
    lr.add_argument("--full", action="store_true",
                    help="make test FULL=1's: lab/lava/dispatcher.toml's full_boot, with "
                    "what the newest make test run built, beside it (nothing if that run "
                    "had not the boot)")
    lr.add_argument("--no-build", action="store_true",
                    help="do not build make test's kernel and initramfs first (make run's "
                    "build, reused from the build cache when the tree is the same)")
    lr.add_argument("--against", help="the make test run to compare with, a results "
                    "directory (default: the newest of build/<base>/results/ with the boot)")
    lr.set_defaults(fn=cmd_lava_run)
    db = sub.add_parser("deb", help="make bindeb-pkg of the patched tree: linux-image, "
                        "linux-headers (with modules), linux-libc-dev in "
                        "build/<base>/debs/<arch>-<config>/")
    db.add_argument("--arch", default="x86_64", choices=profile.arches())
    db.add_argument("--config", default="distro", choices=deb.CONFIGS,
                    help="distro: Debian's config of the base (bases/<base>.toml "
                    "[distro_config]) with configs/common and <arch>, olddefconfig; test: "
                    "make test's kernel's (allnoconfig + the fragments), cheap with ccache")
    db.set_defaults(fn=cmd_deb)
    dc = sub.add_parser("distro-config", help="Debian's config of each arch with "
                        "configs/common and <arch>, made current with olddefconfig; fails "
                        "naming each option of theirs it dropped or changed "
                        "(make check-distro-config)")
    dc.add_argument("--arch", action="append", choices=profile.arches())
    dc.set_defaults(fn=cmd_distro_config)
    ls = sub.add_parser("list", help="the boots and tests of each arch's list")
    ls.add_argument("--arch", action="append", choices=profile.arches())
    ls.set_defaults(fn=cmd_list)
    for name, fn, what in (
            ("kernel", cmd_kernel, "build one kernel: ARCH x VARIANT, debug or not"),
            ("selftests", cmd_selftests, "build that kernel's kvm selftests, static"),
            ("test", cmd_test, "make test without pytest: make check, then build, boot and "
             "run the curated selftests of each arch, KTAP out")):
        s = sub.add_parser(name, help=what)
        if name == "test":
            s.add_argument("--arch", action="append", choices=profile.arches())
            s.add_argument("--boot", action="append",
                           help="only these boots (default: all but the full ones); an "
                           "arch whose list has none of them is left out, and so is this "
                           "base if no list of it has any but another of --bases does")
            s.add_argument("--bases", default="",
                           help="the bases of this make test run, space separated (make "
                           "test without BASE: every base; default: this one): a --boot "
                           "that none of them has is an error")
            s.add_argument("--full", action="store_true",
                           help="also the boots marked full (long matrices)")
            s.add_argument("--no-debug", action="store_true",
                           help="without configs/debug.config and debug-<arch>.config "
                                "(arm64: no stage-2 dump, so eager_split_test skips)")
            s.add_argument("--variant", default="patched", choices=kernel.VARIANTS,
                           help="vanilla: the base alone, the tests the series adds "
                           "reported as skipped (not in this variant)")
            s.add_argument("--no-check", action="store_true", help="without make check")
            s.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                           help="make check and arches run side by side, at most this "
                           "many at once (default: the number of cores)")
        else:
            s.add_argument("--arch", default="x86_64", choices=profile.arches())
            # A bench variant's name is checked when it builds (variants.get):
            # a broken bench/<base>/variants.toml must not stop every command.
            s.add_argument("--variant", default="patched",
                           help="vanilla, patched or a variant of bench/<base>/variants.toml")
            s.add_argument("--debug", action="store_true", help="merge configs/debug.config")
        s.set_defaults(fn=fn)
    return p


def disk_full(e: OSError) -> str:
    """The one line for a write that found no room: where, and how much is
    left there (a clean make test grows build/ to about 6.5 GiB)."""
    where = Path(e.filename) if e.filename else paths.BUILD
    probe = next((d for d in (where, *where.parents) if d.exists()), Path("/"))
    free = shutil.disk_usage(probe).free / 2**30
    return (f"no space left on the device of {where} ({free:.1f} GiB free there now): "
            f"free some, or point LAB_BUILD (build/) or LAB_CACHE elsewhere")


def rerun_for(wanted: str | None, argv: list[str]) -> list[str] | None:
    """--base names another base than the one lab/paths.py placed
    everything for (LAB_BASE's): the command line to run again, with
    LAB_BASE set; None if this process is the right one."""
    if not wanted or wanted == paths.BASE:
        return None
    return [sys.executable, "-m", "lab", *argv]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    again = rerun_for(args.base, argv)
    if again:
        os.environ["LAB_BASE"] = args.base
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(paths.ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
        os.execv(again[0], again)
    try:
        base.check_name(paths.BASE)
        return args.fn(args) or 0
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"error: {disk_full(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
