"""Read kselftest's KTAP/TAP output off a serial console; write the summary.

The console interleaves the runner's TAP with kernel messages and carriage
returns, and one boot holds one TAP document per test (one runner call each),
so the reader keeps only result lines and "# selftests: <dir>: <test>"
headers, and keys results by test basename.
"""
import re
from collections import defaultdict
from dataclasses import dataclass

RESULT_RE = re.compile(r"^(not ok|ok) (\d+) (?:selftests: [^:]+: )?(\S+)(?:\s+#\s*(.*))?$")
HEADER_RE = re.compile(r"^# selftests: [^:]+: (\S+)$")
# kernel messages carry a printk timestamp; the runner's lines do not.
TIMESTAMP_RE = re.compile(r"^\[\s*\d+\.\d+\]\s?")

PASS, FAIL, SKIP, TIMEOUT, NOT_RUN = "pass", "fail", "skip", "timeout", "not run"
# Failed, then passed when run again, and the failure is a known emulation flake.
FLAKY = "flaky"


@dataclass(frozen=True)
class Result:
    name: str
    status: str
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status in (FAIL, TIMEOUT, NOT_RUN)


def clean(line: str) -> str:
    return line.replace("\r", "").rstrip("\n")


def parse_result(line: str) -> Result | None:
    m = RESULT_RE.match(clean(line).strip())
    if not m:
        return None
    verdict, _, name, directive = m.groups()
    directive = (directive or "").strip()
    if directive.upper().startswith("SKIP"):
        return Result(name, SKIP, directive[4:].strip())
    if directive.upper().startswith("TIMEOUT"):
        return Result(name, TIMEOUT, directive)
    if verdict == "ok":
        return Result(name, PASS, directive)
    return Result(name, FAIL, directive)


@dataclass(frozen=True)
class Run:
    """One run of a test: its result and the console lines between its
    header and its result line (its output, and kernel messages meanwhile)."""
    result: Result
    output: tuple[str, ...]

    def tail(self, n: int = 25) -> str:
        return "\n".join("    | " + ln for ln in self.output[-n:] or ["(no output)"])

    def why(self) -> str:
        """The result's directive, with the assertion that failed if the test
        printed one: the KTAP line then says what failed and where."""
        failed = assertion(self.output)
        return f"{self.result.detail} ({failed})" if failed else self.result.detail


ASSERTION_HEADER = "==== Test Assertion Failure ===="
# Lines between a kvm selftest's assertion and its message that say nothing
# about the failure: the process ids, and the backtrace test_dump_stack()
# prints with `addr2line -fpai | cat -n` (frames, inlined callers), or its
# complaint when the guest has no addr2line.
ASSERTION_NOISE_RE = re.compile(r"^(pid=\d+ tid=\d+ |\d+\s+(0x[0-9a-f]+: |\(inlined by\) )"
                                r"|sh: addr2line: |\(stack trace empty\)$)")
ASSERTION_MAX = 300


def assertion(output) -> str:
    """The last failed assertion of a kvm selftest (lib/assert.c) in its
    output, on one line: "file.c:line: expression: message"; "" if none."""
    lines = [ln.removeprefix("#").strip() for ln in output if not TIMESTAMP_RE.match(ln)]
    starts = [i for i, ln in enumerate(lines) if ln == ASSERTION_HEADER]
    if not starts:
        return ""
    said = [ln for ln in lines[starts[-1] + 1:] if ln and not ASSERTION_NOISE_RE.match(ln)]
    text = ": ".join(said)
    return text if len(text) <= ASSERTION_MAX else text[:ASSERTION_MAX - 3] + "..."


def runs(lines) -> dict[str, list[Run]]:
    """Test basename -> every run of it, in console order (a test run again
    after a failure has two)."""
    found = defaultdict(list)
    output = []
    for line in lines:
        line = clean(line)
        if header_test(line):
            output = []
            continue
        r = parse_result(line)
        if r:
            found[r.name].append(Run(r, tuple(output)))
            output = []
        elif line.strip() not in ("TAP version 13", "1..1", "#"):
            output.append(line)
    return dict(found)


def header_test(line: str) -> str | None:
    m = HEADER_RE.match(clean(line).strip())
    return m.group(1) if m else None


def render(rows: list[tuple[str, Result]]) -> str:
    """kselftest's own format: TAP 13, one line per test, Totals line."""
    out = ["TAP version 13", f"1..{len(rows)}"]
    counts = {PASS: 0, FAIL: 0, SKIP: 0}
    for i, (label, r) in enumerate(rows, 1):
        if r.status == PASS:
            out.append(f"ok {i} {label}" + (f" # {r.detail}" if r.detail else ""))
            counts[PASS] += 1
        elif r.status == FLAKY:
            out.append(f"ok {i} {label} # flaky: {r.detail}")
            counts[PASS] += 1
        elif r.status == SKIP:
            out.append(f"ok {i} {label} # SKIP {r.detail}".rstrip())
            counts[SKIP] += 1
        else:
            tag = {TIMEOUT: r.detail or "TIMEOUT", NOT_RUN: f"not run: {r.detail}"}.get(
                r.status, r.detail)
            out.append(f"not ok {i} {label}" + (f" # {tag}" if tag else ""))
            counts[FAIL] += 1
    out.append(f"# Totals: pass:{counts[PASS]} fail:{counts[FAIL]} xfail:0 xpass:0 "
               f"skip:{counts[SKIP]} error:0")
    return "\n".join(out) + "\n"
