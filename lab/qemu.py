"""Boot a guest in QEMU and read its serial console, under a host watchdog.

The guest is expected to end by itself (its init reboots, panic=-1 reboots,
-no-reboot turns both into QEMU exiting). A wedged TCG guest can ignore every
timeout inside it, so past its budget QEMU is killed here, and the caller gets
the console so far.
"""
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.progress import LabError

ENDED, EXITED_EARLY, KILLED = "ended", "exited early", "killed by watchdog"


@dataclass
class Console:
    lines: list[str] = field(default_factory=list)
    outcome: str = ""
    returncode: int | None = None
    seconds: float = 0.0
    peak_rss_kib: int = 0
    cpu_seconds: float = 0.0     # QEMU's user + system time: cores busy x wall

    def tail(self, n: int = 25) -> str:
        return "\n".join("    | " + ln.rstrip("\r\n") for ln in self.lines[-n:])


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _cpu_seconds(pid: int) -> float:
    try:
        # fields after the ")" that ends the command name: utime is the 12th
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def run(argv: list[str], budget: float, log: Path, done_marker: str,
        on_line=None) -> Console:
    """Run QEMU until it exits or budget seconds pass.

    outcome is ENDED when done_marker was printed before QEMU exited,
    EXITED_EARLY when QEMU exited without it (panic, crash), KILLED when the
    watchdog had to end it.
    """
    if not shutil.which(argv[0]):
        raise LabError(f"{argv[0]} not found (make deps installs QEMU)")
    log.parent.mkdir(parents=True, exist_ok=True)
    con = Console()
    start = time.monotonic()
    with open(log, "w") as logf:
        logf.write("$ " + " ".join(argv) + "\n")
        logf.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, bufsize=0)

        def reader():
            for raw in iter(proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace")
                con.lines.append(line)
                logf.write(line)
                logf.flush()
                if on_line:
                    on_line(line)

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        deadline = start + budget
        while proc.poll() is None and time.monotonic() < deadline:
            con.peak_rss_kib = max(con.peak_rss_kib, _rss_kib(proc.pid))
            con.cpu_seconds = max(con.cpu_seconds, _cpu_seconds(proc.pid))
            time.sleep(0.5)
        killed = proc.poll() is None
        if killed:
            proc.kill()
        con.returncode = proc.wait()
        t.join(timeout=10)
        con.seconds = time.monotonic() - start
        if killed:
            logf.write(f"\n{KILLED_LINE} {budget:.0f} s budget\n")
        con.outcome = _outcome(con.lines, done_marker, killed)
    return con


# The log of run(): "$ <argv>", the console, and this line if the watchdog
# ended it.
KILLED_LINE = "[lab] QEMU killed after"


def _outcome(lines: list[str], done_marker: str, killed: bool) -> str:
    if killed:
        return KILLED
    return ENDED if any(ln.startswith(done_marker) for ln in lines) else EXITED_EARLY


def read_log(log: Path, done_marker: str) -> tuple[str, Console]:
    """(QEMU's command line, the console) of a log run() wrote, with the
    outcome the log shows, to judge it again; a bare console (no command
    line) reads as well."""
    try:
        lines = log.read_text(errors="replace").splitlines(keepends=True)
    except OSError as e:
        raise LabError(f"cannot read {log}: {e.strerror}") from e
    argv = lines.pop(0)[2:].strip() if lines and lines[0].startswith("$ ") else ""
    killed = any(ln.startswith(KILLED_LINE) for ln in lines)
    lines = [ln for ln in lines if not ln.startswith(KILLED_LINE)]
    return argv, Console(lines=lines, outcome=_outcome(lines, done_marker, killed))
