"""Progress lines with elapsed time, logged subprocesses, and the one error type.

Every long step goes through run_logged(): its output lands in build/<base>/logs/ and
a failure names the step, the log and the lines that explain it.
"""
import contextlib
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

_START = time.monotonic()


class LabError(Exception):
    """A failure the user can act on; the CLI prints it as one line and exits 1."""


def elapsed() -> str:
    secs = int(time.monotonic() - _START)
    return f"{secs // 60:02d}:{secs % 60:02d}"


def say(msg: str) -> None:
    print(f"[{elapsed()}] {msg}", file=sys.stderr, flush=True)


def run_logged(cmd, log: Path, what: str, cwd=None, env=None, explain=None, timeout=None):
    """Run cmd with stdout+stderr appended to log; raise LabError on failure.

    explain(log_text) may return the lines that say why (e.g. compiler errors);
    by default the last lines of the log are shown. timeout (seconds; None:
    none, as for builds, which a lock and make's own end bound): past it
    cmd is killed and that is the failure.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "a") as f:
        f.write(f"$ {' '.join(str(c) for c in cmd)}\n")
        f.flush()
        try:
            rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT,
                                 cwd=cwd, env=env, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LabError(f"{what}: no end after {timeout:.0f} s, killed; log: {log}") from None
        except FileNotFoundError as e:
            raise LabError(f"{what}: cannot run {cmd[0]}: {e.strerror}") from e
    if rc != 0:
        text = log.read_text(errors="replace")
        lines = explain(text) if explain else None
        if not lines:
            lines = text.splitlines()[-15:]
        detail = "\n".join("    " + line for line in lines)
        raise LabError(f"{what} failed (exit {rc}); log: {log}\n{detail}")
    return time.monotonic() - start


def compiler_errors(text: str) -> list[str]:
    """The lines of a make log that say why a build failed."""
    keys = ("error:", "Error ", "undefined reference", "*** ")
    return [line for line in text.splitlines() if any(k in line for k in keys)][:15]


def jobs(environ=os.environ) -> int:
    """make's -j for kernel and selftests builds: the cores and one, or
    LAB_JOBS (make ... JOBS=n) on a machine others share."""
    want = environ.get("LAB_JOBS", "").strip()
    if want:
        if not want.isdigit() or int(want) < 1:
            raise LabError(f"LAB_JOBS={want}: a number of make jobs, 1 or more")
        return int(want)
    return (os.cpu_count() or 1) + 1


# A build waits this long for another process's build of the same output
# directory (a cold kernel build under load took ~15 min) before it gives up.
LOCK_WAIT = 45 * 60


@contextlib.contextmanager
def exclusive(lock: Path, what: str, wait: float = LOCK_WAIT, doing: str = "build"):
    """Hold an flock on lock: make run, make test and make kernel of one
    kernel, started by different people, must not build into the same
    directory at once (they did, 2026-11-24: make kernel relinked vmlinux
    while make run built the selftests against its headers). doing: what
    the holder does, in the messages (lab/apt.py: "apt command")."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as f:
        deadline = time.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LabError(f"{what}: another {doing} held {lock} for {wait / 60:.0f} min; "
                                   f"is it stuck? (its pid: {lock.read_text().strip() or '?'})") from None
                if not told:
                    say(f"{what}: waiting for another {doing} to end (pid "
                        f"{lock.read_text().strip() or '?'}, lock {lock})")
                    told = True
                time.sleep(2)
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield
