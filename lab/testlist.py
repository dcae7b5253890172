"""The curated selftest list of an arch (testlists/<arch>.toml).

A list has boots (a kernel command line each) and tests (arguments sized for
TCG, a timeout, the boots they run in). A test that cannot pass under TCG stays
in the list with `skip = "reason"`: it is reported as skipped, never dropped.
"""
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lab import paths
from lab.progress import LabError


@dataclass(frozen=True)
class Boot:
    name: str
    cmdline: str
    why: str


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
        return self.name.rsplit("/", 1)[-1]

    @property
    def args_var(self) -> str:
        """kselftest runner's per-test argument variable (runner.sh's sanitizing)."""
        return "KSELFTEST_" + re.sub(r"[^A-Za-z0-9_]", "_", self.basename).upper() + "_ARGS"


@dataclass(frozen=True)
class TestList:
    arch: str
    boots: tuple[Boot, ...]
    tests: tuple[Test, ...]

    def tests_for(self, boot: str) -> list[Test]:
        return [t for t in self.tests if boot in t.boots]

    def budget(self, boot: str, boot_overhead: int) -> int:
        """Host watchdog budget for one boot: every test may use its timeout."""
        return boot_overhead + sum(t.timeout + 5 for t in self.tests_for(boot) if not t.skip)


def parse(text: str, arch: str, origin: str) -> TestList:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{origin}: {e}") from e
    default_timeout = data.get("defaults", {}).get("timeout", 120)
    boots = tuple(Boot(b["name"], b.get("cmdline", ""), b.get("why", ""))
                  for b in data.get("boot", []))
    if not boots:
        raise LabError(f"{origin}: no [[boot]]")
    boot_names = [b.name for b in boots]
    if len(set(boot_names)) != len(boot_names):
        raise LabError(f"{origin}: boot names repeat: {boot_names}")
    tests = []
    for i, t in enumerate(data.get("test", []), 1):
        if "name" not in t:
            raise LabError(f"{origin}: test #{i} has no name")
        unknown = set(t) - {"name", "args", "timeout", "boots", "skip", "files", "must_run"}
        if unknown:
            raise LabError(f"{origin}: test {t['name']}: unknown keys {sorted(unknown)}")
        tb = tuple(t.get("boots", boot_names))
        bad = [b for b in tb if b not in boot_names]
        if bad:
            raise LabError(f"{origin}: test {t['name']}: unknown boot(s) {bad}")
        tests.append(Test(t["name"], t.get("args", ""), int(t.get("timeout", default_timeout)),
                          tb, t.get("skip", ""), tuple(t.get("files", ())),
                          bool(t.get("must_run", False))))
    keys = [(t.basename, b) for t in tests for b in t.boots]
    if len(set(keys)) != len(keys):
        raise LabError(f"{origin}: a test appears twice in one boot")
    return TestList(arch, boots, tuple(tests))


def load(arch: str, directory: Path = paths.TESTLISTS) -> TestList:
    f = directory / f"{arch}.toml"
    if not f.exists():
        raise LabError(f"no curated test list {f}")
    return parse(f.read_text(), arch, str(f))
