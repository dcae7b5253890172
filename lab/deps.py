"""System tools the harness needs, each named with its Debian package
(apt-packages.txt, the one list), checked and installed; and the Debian
architectures of the guests, whose busybox-static apt-get downloads (a
foreign one, arm64 on an x86_64 host, must be added to dpkg first).

A tool is a program on PATH, a file (an absolute path), or a probe,
`$(<command>)`: a command that must run and exit 0, for a package a tool
needs but does not depend on (git send-email, installed without its
Recommends, dies in Perl on Git/LoadCPAN/Mail/Address.pm: libmailtools-perl).
"""
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from lab import apt, paths, profile
from lab.progress import LabError, exclusive, say

LIST = paths.ROOT / "apt-packages.txt"


PROBE_RE = re.compile(r"\$\((?P<command>[^)]+)\)")
# A probe runs what it probes, cheaply: a tool that hangs is as broken.
PROBE_SECONDS = 60


def parse(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            tool, package = line.rsplit(None, 1)
            pairs.append((tool, package))
    return pairs


def probe_failure(command: str) -> str:
    """Why a probe's command fails ("" when it runs and exits 0): its
    program missing, its exit code and last line of output, or its time."""
    argv = shlex.split(command)
    if not shutil.which(argv[0]):
        return f"{argv[0]} not found"
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PROBE_SECONDS, cwd="/")
    except subprocess.TimeoutExpired:
        return f"no end after {PROBE_SECONDS} s"
    if proc.returncode == 0:
        return ""
    # The first line: Perl's and most tools' own words (Perl's last is
    # "BEGIN failed--compilation aborted.").
    said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return f"exit {proc.returncode}" + (f": {said[0][:200]}" if said else "")


def present(tool: str) -> bool:
    m = PROBE_RE.fullmatch(tool)
    if m:
        return not probe_failure(m["command"])
    return Path(tool).exists() if tool.startswith("/") else shutil.which(tool) is not None


def describe(tool: str) -> str:
    """A missing tool as messages name it: a probe by its command."""
    m = PROBE_RE.fullmatch(tool)
    return f"`{m['command']}` fails ({probe_failure(m['command'])})" if m else tool


def missing(pairs=None) -> list[tuple[str, str]]:
    return [(t, p) for t, p in (pairs or parse(LIST.read_text())) if not present(t)]


def _dpkg(*args: str) -> list[str]:
    if not shutil.which("dpkg"):
        raise LabError("deps: dpkg not found: the harness fetches Debian packages")
    proc = subprocess.run(["dpkg", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"deps: dpkg {' '.join(args)} failed: {proc.stderr.strip()[-200:]}")
    return proc.stdout.split()


def missing_archs() -> list[str]:
    """The guests' Debian architectures that dpkg knows neither as its own
    nor as a foreign one: apt-get cannot download their packages."""
    known = {*_dpkg("--print-architecture"), *_dpkg("--print-foreign-architectures")}
    return sorted({profile.load(a).debian_arch for a in profile.arches()} - known)


def install() -> None:
    lack, archs = missing(), missing_archs()
    if not lack and not archs:
        say("deps: every tool is present")
        return
    pkgs = sorted({p for _, p in lack})
    say("deps: " + "; ".join(
        ([f"missing {', '.join(describe(t) for t, _ in lack)}; installing {' '.join(pkgs)}"]
         if lack else [])
        + ([f"adding the dpkg architecture(s) {', '.join(archs)} (guest packages)"]
           if archs else [])))
    if os.geteuid() != 0:
        raise LabError("deps: need root to " + " and ".join(
            ([f"install {' '.join(pkgs)} (apt-get install ...)"] if lack else [])
            + ([f"add {', '.join(archs)} (dpkg --add-architecture ...; apt-get update)"]
               if archs else [])))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    steps = [["dpkg", "--add-architecture", a] for a in archs] + [["apt-get", "update", "-q"]]
    if pkgs:
        steps.append(["apt-get", "install", "-y", "-q", *pkgs])
    # The base fetch's apt runs take the same lock: a second apt run at once
    # can delete the first one's downloads.
    with exclusive(apt.lock(), "apt", doing="apt command"):
        for argv in steps:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                errs = [ln for ln in (proc.stdout + proc.stderr).splitlines()
                        if ln.startswith("E:")]
                raise LabError(f"deps: {' '.join(argv[:2])} failed: "
                               f"{errs[-1] if errs else proc.stderr.strip()[-200:]}")
    if missing_archs():
        raise LabError(f"deps: dpkg still lacks {', '.join(missing_archs())} after adding it")
    still = missing()
    if still:
        raise LabError("deps: still missing after install: "
                       + ", ".join(f"{describe(t)} ({p})" for t, p in still))
