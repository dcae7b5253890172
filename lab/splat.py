"""Find kernel splats in a console log and name the test that was running.

Only kernel messages count: a pattern must start the line, after the printk
timestamp if any. The runner prefixes every line a test prints with "# ", so
a test that prints "WARNING:" cannot trip this.
"""
import re
from dataclasses import dataclass

from lab.ktap import TIMESTAMP_RE, clean, header_test

SPLAT_PATTERNS = [
    r"WARNING: ",                      # WARN_ON and lockdep's reports
    r"BUG: ",                          # BUG(), sleeping in atomic, KASAN, bad page
    r"kernel BUG at ",
    r"Oops",
    r"Call Trace:",
    r"general protection fault",
    r"Unable to handle kernel",        # arm64 faults
    r"Internal error: ",               # arm64 die()
    r"Kernel panic",
    r"UBSAN: ",
    r"KASAN: ",
    r"possible circular locking dependency",
    r"inconsistent lock state",
    r"suspicious RCU usage",
    r"rcu: INFO: rcu_\w+ (self-)?detected stall",
    r"rcu: INFO: rcu_\w+ detected stalls",
    r"watchdog: BUG: soft lockup",
    r"INFO: task .* blocked for more than",
]
SPLAT_RE = re.compile("^(?:" + "|".join(SPLAT_PATTERNS) + ")")


@dataclass(frozen=True)
class Splat:
    test: str        # the test running when it appeared, or "boot"
    line: str        # the first line of the splat
    context: tuple[str, ...]


def scan(lines: list[str], context: int = 12) -> list[Splat]:
    """One Splat per report: lines within `context` of a report's first line
    (its Call Trace, say) belong to it."""
    splats = []
    current = "boot"
    last_hit = -context - 1
    cleaned = [clean(ln) for ln in lines]
    for i, line in enumerate(cleaned):
        name = header_test(line)
        if name:
            current = name
            last_hit = -context - 1     # a new test starts a new report
            continue
        body = TIMESTAMP_RE.sub("", line)
        if SPLAT_RE.match(body):
            if i - last_hit > context:
                splats.append(Splat(current, body, tuple(cleaned[i:i + context])))
            last_hit = i
    return splats
