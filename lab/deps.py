"""System tools the harness needs, each named with its Debian package
(apt-packages.txt, the one list), checked and installed."""
import os
import shutil
import subprocess
from pathlib import Path

from lab import paths
from lab.progress import LabError, say

LIST = paths.ROOT / "apt-packages.txt"


def parse(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            tool, package = line.split()
            pairs.append((tool, package))
    return pairs


def present(tool: str) -> bool:
    return Path(tool).exists() if tool.startswith("/") else shutil.which(tool) is not None


def missing(pairs=None) -> list[tuple[str, str]]:
    return [(t, p) for t, p in (pairs or parse(LIST.read_text())) if not present(t)]


def install() -> None:
    lack = missing()
    if not lack:
        say("deps: every tool is present")
        return
    pkgs = sorted({p for _, p in lack})
    say(f"deps: missing {', '.join(t for t, _ in lack)}; installing {' '.join(pkgs)}")
    if os.geteuid() != 0:
        raise LabError(f"deps: need root to install {' '.join(pkgs)} (apt-get install ...)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *pkgs]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            errs = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("E:")]
            raise LabError(f"deps: {' '.join(argv[:2])} failed: "
                           f"{errs[-1] if errs else proc.stderr.strip()[-200:]}")
    still = missing()
    if still:
        raise LabError("deps: still missing after install: "
                       + ", ".join(f"{t} ({p})" for t, p in still))
