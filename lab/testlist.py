"""The curated selftest list of an arch (testlists/<base>/<arch>.toml).

A list has boots (a kernel command line each) and tests (arguments sized for
TCG, a timeout, the boots they run in). A test that cannot pass under TCG stays
in the list with `skip = "reason"`: it is reported as skipped, never dropped.

The guest runs a failed test once more. `[[flaky]]` entries name the failures
that emulation causes now and then (a regex over the failed run's result and
output, and the measurement that showed it): only such a failure followed by a
pass counts as a pass, reported as flaky; any other failure stands. An entry
with `kind = "crash"` names a crash of the guest kernel instead (a regex over
the console lines of the test that was running): the boot's remaining tests
then run in a second boot, which must not crash (testrun.run_boot).

A boot with `full = true` is left out of the default run (make test), which
must stay short: it holds the long matrices (every guest mode with every
backing) that `make test FULL=1`, or naming the boot, runs. A boot with
`config = "<name>"` runs another kernel: the test kernel with
configs/<name>.config merged last (e.g. KASAN), built after the arch's. A
test without `boots` runs in every boot of the default run that runs the
test kernel; a full boot and a boot of another kernel run only the tests
that name them.

A `[[host]]` is a real machine (make kselftest-tar HOST=<name>): its CPUs,
memory and the kernel command line its list needs (a hugetlb pool), and
its own list, `[[host.test]]`: tests of this list (a name the list has not
is refused) with arguments sized for that machine and a timeout each. A
test the host list leaves out is not run there: the TCG sizes are no
measure of hardware, and a curated list runs what the series changes.
"""
import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, ktap, paths
from lab.datafile import Key
from lab.progress import LabError


# The guest runs a failed test once more, at most this many tests per boot:
# the flakes of x86's list are independent of each other, and two came in
# one boot of make test's CI (2026-11-23 19:15, TDP MMU: a vCPU shutdown in
# dirty_log_perf_test, then a hang in dirty_log_page_splitting_test, which
# failed the run with the boot's one retry used up). A regression that fails
# every test still costs only this many reruns.
RETRIES_PER_BOOT = 2


def basename(name: str) -> str:
    """A test's program name without its folder in the kvm collection."""
    return name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Boot:
    name: str
    cmdline: str
    why: str
    full: bool = False   # only in a full run, or when named
    # A fragment of configs/ merged on top of the test kernel's (e.g. "kasan"):
    # the boot runs that kernel, which make test builds beside the other.
    config: str = ""
    # QEMU's -cpu in place of the arch profile's: a CPU model or property the
    # boot is about (e.g. an AmpereOne MIDR, for its stage-2 errata).
    cpu: str = ""


@dataclass(frozen=True)
class Test:
    name: str          # as installed in the kvm collection, e.g. nx_huge_pages_test.sh
    args: str
    timeout: int       # seconds, enforced in the guest by kselftest's runner
    boots: tuple[str, ...]
    skip: str          # non-empty: not run, and why
    files: tuple[str, ...] = ()  # other files of the collection it runs
    must_run: bool = False       # a SKIP result is a failure

    @property
    def basename(self) -> str:
        return basename(self.name)

    @property
    def args_var(self) -> str:
        """kselftest runner's per-test argument variable (runner.sh's sanitizing)."""
        return "KSELFTEST_" + re.sub(r"[^A-Za-z0-9_]", "_", self.basename).upper() + "_ARGS"


@dataclass(frozen=True)
class HostTest:
    name: str          # a [[test]] of the list, as installed in the kvm collection
    label: str         # its name on the host, unique there (one test, several sizes)
    args: str
    timeout: int       # seconds, kselftest's runner's for this one test
    why: str = ""


@dataclass(frozen=True)
class Host:
    name: str
    why: str
    cpus: int
    memory: str        # e.g. "256G"
    cmdline: str       # the host kernel's command line the tests need
    tests: tuple[HostTest, ...]


# The skip reason of a listed test that the selftests being run do not have.
NOT_IN_VARIANT = "not in this variant"

FLAKY_KINDS = ("failure", "crash")


@dataclass(frozen=True)
class Flaky:
    match: str         # regex searched in the result's directive and the run's output
    why: str
    kind: str = "failure"   # or "crash": a regex over the console of a guest that crashed

    def matches(self, run: ktap.Run) -> bool:
        return any(re.search(self.match, ln)
                   for ln in (run.result.detail or run.result.status, *run.output))


@dataclass(frozen=True)
class TestList:
    arch: str
    boots: tuple[Boot, ...]
    tests: tuple[Test, ...]
    flaky: tuple[Flaky, ...] = ()
    default_timeout: int = 120
    origin: str = ""     # the file, as messages name it: testlists/<base>/<arch>.toml
    hosts: tuple[Host, ...] = ()

    @property
    def file(self) -> str:
        return self.origin or datafile.origin(paths.TESTLISTS / f"{self.arch}.toml")

    def known_flake(self, run: ktap.Run) -> Flaky | None:
        """The [[flaky]] entry a failed run matches, if any."""
        return next((f for f in self.flaky if f.kind == "failure" and f.matches(run)), None)

    def known_crash(self, lines: list[str]) -> Flaky | None:
        """The crash entry whose regex one of these console lines matches."""
        return next((f for f in self.flaky if f.kind == "crash"
                     and any(re.search(f.match, ln) for ln in lines)), None)

    def tests_for(self, boot: str) -> list[Test]:
        return [t for t in self.tests if boot in t.boots]

    def selected(self, names: list | None = None, full: bool = False) -> list[Boot]:
        """The boots to run: those named, else every boot of the default run
        (all of them with full)."""
        if not names:
            return [b for b in self.boots if full or not b.full]
        unknown = [n for n in names if n not in {b.name for b in self.boots}]
        if unknown:
            raise LabError(f"{self.file} has no boot {', '.join(unknown)}; "
                           f"its boots: {', '.join(b.name for b in self.boots)}")
        return [b for b in self.boots if b.name in names]

    def boot(self, name: str) -> Boot:
        return self.selected([name])[0]

    def host(self, name: str) -> Host:
        h = next((h for h in self.hosts if h.name == name), None)
        if h is None:
            raise LabError(f"{self.file} has no [[host]] {name!r}; its hosts: "
                           f"{', '.join(h.name for h in self.hosts) or 'none'}")
        return h

    def for_run(self, boot: str, names: list[str], args: str | None = None) -> "TestList":
        """The list of make run: one boot, running just the named tests in
        that order. A test keeps its entry's arguments, timeout and files
        (this boot's entry, else another boot's), args (when not None)
        replaces its arguments, and a skip is lifted: it was asked for by
        name. A name the list does not know runs with args and the default
        timeout, so a new test can be tried before it is listed."""
        bt = self.boot(boot)
        if not names:
            raise LabError("name at least one test to run (TEST=<name>[,<name>...])")
        tests = []
        for n in names:
            if (not re.fullmatch(r"[A-Za-z0-9_./-]+", n) or n.startswith("/")
                    or ".." in n.split("/")):
                raise LabError(f"test name {n!r}: not a file of the kvm collection")
            same = [t for t in self.tests if n in (t.name, t.basename)]
            t = next((t for t in same if boot in t.boots), same[0] if same else None)
            if t is None:
                t = Test(n, "", self.default_timeout, (), "")
            tests.append(dataclasses.replace(
                t, args=t.args if args is None else args, boots=(boot,), skip=""))
        if len({t.basename for t in tests}) != len(tests):
            raise LabError(f"a test is named twice: {', '.join(names)}")
        return dataclasses.replace(self, boots=(bt,), tests=tuple(tests))

    def in_build(self, installed: set[str]) -> "TestList":
        """The list for a selftests build that lacks some of its tests (the
        vanilla kernel's: the series adds tests the base has not): a test
        whose program or one of whose files installed (paths in the kvm
        collection) has not is skipped, NOT_IN_VARIANT."""
        return dataclasses.replace(self, tests=tuple(
            t if t.skip or {t.name, *t.files} <= installed
            else dataclasses.replace(t, skip=NOT_IN_VARIANT) for t in self.tests))

    def test_seconds(self, boots: list[Boot]) -> int:
        """The sum of the timeouts of every test to run in these boots: how
        the arches compare in test time."""
        return sum(t.timeout for b in boots for t in self.tests_for(b.name) if not t.skip)

    def scaled(self, factor: int) -> "TestList":
        """The list with every timeout multiplied by factor: the timeouts are
        sized for a guest that has the machine to itself, and one that shares
        it with another lane gets about half the CPU time."""
        if factor == 1:
            return self
        return dataclasses.replace(self, tests=tuple(
            dataclasses.replace(t, timeout=t.timeout * factor) for t in self.tests))

    def budget(self, boot: str, boot_overhead: int) -> int:
        """Host watchdog budget for one boot: every test may use its timeout,
        and the longest RETRIES_PER_BOOT of them twice (the guest's reruns)."""
        timeouts = sorted((t.timeout + 5 for t in self.tests_for(boot) if not t.skip),
                          reverse=True)
        return boot_overhead + sum(timeouts) + sum(timeouts[:RETRIES_PER_BOOT])


BOOT = datafile.Table({"name": Key(str), "why": Key(str, ""), "cmdline": Key(str, ""),
                       "full": Key(bool, False), "config": Key(str, ""),
                       "cpu": Key(str, "")})
TEST = datafile.Table({"name": Key(str), "args": Key(str, ""), "timeout": Key(int, None),
                       "boots": Key([str], None), "skip": Key(str, ""), "files": Key([str], []),
                       "must_run": Key(bool, False)})
FLAKY = datafile.Table({"match": Key(str), "why": Key(str),
                        "kind": Key(str, "failure", choices=FLAKY_KINDS)}, label_key=None)
HOST_TEST = datafile.Table({"name": Key(str), "label": Key(str, ""), "args": Key(str, ""),
                           "timeout": Key(int), "why": Key(str, "")})
HOST = datafile.Table({"name": Key(str), "why": Key(str, ""), "cpus": Key(int),
                       "memory": Key(str), "cmdline": Key(str, ""), "test": Key([HOST_TEST])})
FILE = datafile.Table({"defaults": Key(datafile.Table({"timeout": Key(int, 120)}), {}),
                       "boot": Key([BOOT], []), "test": Key([TEST], []),
                       "flaky": Key([FLAKY], []), "host": Key([HOST], [])})
# A host's name and a test's label name files of the bundle.
FILE_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _boot(b: dict, origin: str, configs: Path) -> Boot:
    config = b["config"]
    if config and not (re.fullmatch(r"[a-z0-9][a-z0-9_-]*", config)
                       and (configs / f"{config}.config").is_file()):
        raise LabError(f"{origin}: [[boot]] {b['name']!r}: config {config!r} names no fragment "
                       f"{configs}/<name>.config")
    return Boot(b["name"], b["cmdline"], b["why"], b["full"], config, b["cpu"])


def _host(h: dict, origin: str, tests: list[Test]) -> Host:
    where = f"{origin}: {datafile.label('host', h, 0)}"
    if not FILE_NAME_RE.fullmatch(h["name"]):
        raise LabError(f"{where}: the name must be letters, digits, '_', '.' and '-'")
    if not re.fullmatch(r"[1-9][0-9]*[MGT]", h["memory"]):
        raise LabError(f"{where}: memory {h['memory']!r}: not <n>M, <n>G or <n>T")
    if h["cpus"] < 1:
        raise LabError(f"{where}: cpus {h['cpus']}: not a count of CPUs")
    if not h["test"]:
        raise LabError(f"{where}: no test")
    known = list(dict.fromkeys(t.name for t in tests))
    out = []
    for t in h["test"]:
        at = f"{where}, test {t['name']!r}"
        if t["name"] not in known:
            raise LabError(f"{at}: not a [[test]] of this list{datafile.closest(t['name'], known)}")
        if t["timeout"] < 1:
            raise LabError(f"{at}: timeout {t['timeout']}: not a number of seconds")
        label = t["label"] or basename(t["name"])
        if not FILE_NAME_RE.fullmatch(label):
            raise LabError(f"{at}: label {label!r}: letters, digits, '_', '.' and '-' only")
        if label in {x.label for x in out}:
            raise LabError(f"{at}: the label {label!r} is taken by an earlier test of the "
                           f"host: give each run of a test a label of its own")
        out.append(HostTest(t["name"], label, t["args"], t["timeout"], " ".join(t["why"].split())))
    return Host(h["name"], " ".join(h["why"].split()), h["cpus"], h["memory"], h["cmdline"],
                tuple(out))


def parse(text: str, arch: str, origin: str, configs: Path = paths.CONFIGS) -> TestList:
    data = datafile.parse(text, FILE, origin)
    default_timeout = data["defaults"]["timeout"]
    boots = tuple(_boot(b, origin, configs) for b in data["boot"])
    if not boots:
        raise LabError(f"{origin}: no [[boot]]")
    boot_names = [b.name for b in boots]
    if len(set(boot_names)) != len(boot_names):
        raise LabError(f"{origin}: boot names repeat: {boot_names}")
    tests = []
    for t in data["test"]:
        tb = tuple(t["boots"] if t["boots"] is not None
                   else [b.name for b in boots if not (b.full or b.config)])
        bad = [b for b in tb if b not in boot_names]
        if bad:
            raise LabError(f"{origin}: [[test]] {t['name']!r}: unknown boot(s) {bad}; "
                           f"the boots: {', '.join(boot_names)}")
        timeout = default_timeout if t["timeout"] is None else t["timeout"]
        tests.append(Test(t["name"], t["args"], timeout, tb, t["skip"], tuple(t["files"]),
                          t["must_run"]))
    keys = [(t.basename, b) for t in tests for b in t.boots]
    if len(set(keys)) != len(keys):
        raise LabError(f"{origin}: a test appears twice in one boot")
    flaky = []
    for i, f in enumerate(data["flaky"], 1):
        try:
            re.compile(f["match"])
        except re.error as e:
            raise LabError(f"{origin}: [[flaky]] #{i}: bad regex {f['match']!r}: {e}") from e
        flaky.append(Flaky(f["match"], " ".join(f["why"].split()), f["kind"]))
    hosts = tuple(_host(h, origin, tests) for h in data["host"])
    names = [h.name for h in hosts]
    if len(set(names)) != len(names):
        raise LabError(f"{origin}: host names repeat: {names}")
    return TestList(arch, boots, tuple(tests), tuple(flaky), default_timeout, origin, hosts)


def describe(tl: TestList) -> str:
    """python3 -m lab list: each boot, its command line, its tests."""
    out = [f"{tl.arch}:"]
    for b in tl.boots:
        tags = [t for t in ("full" if b.full else "", f"kernel +{b.config}" if b.config else "") if t]
        out.append(f"  {b.name}" + (f" ({', '.join(tags)})" if tags else "")
                   + f": {b.why or '-'}; command line: {b.cmdline or '(default)'}")
        for t in tl.tests_for(b.name):
            what = f"skip: {t.skip.split(':')[0]}" if t.skip else f"{t.timeout} s"
            out.append(f"    {t.name} {t.args}".rstrip() + f"  [{what}]")
    for h in tl.hosts:
        out.append(f"  host {h.name} ({h.cpus} CPUs, {h.memory}; make kselftest-tar "
                   f"ARCH={tl.arch} HOST={h.name}): {h.why or '-'}; command line: "
                   f"{h.cmdline or '(any)'}")
        for t in h.tests:
            label = f" ({t.label})" if t.label != basename(t.name) else ""
            out.append(f"    {t.name} {t.args}".rstrip() + f"{label}  [{t.timeout} s]")
    return "\n".join(out) + "\n"


def load(arch: str, directory: Path = paths.TESTLISTS) -> TestList:
    f = directory / f"{arch}.toml"
    if not f.exists():
        raise LabError(f"no curated test list {f}")
    return parse(f.read_text(), arch, datafile.origin(f))
