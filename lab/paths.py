"""Where things live. Everything generated goes under build/ (or LAB_BUILD)."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("LAB_BUILD", ROOT / "build")).resolve()
LOGS = BUILD / "logs"
RESULTS = BUILD / "results"
PATCHES = ROOT / "patches"
CONFIGS = ROOT / "configs"
TESTLISTS = ROOT / "testlists"
ARCH_PROFILES = ROOT / "lab" / "arch_profiles"
# Downloads verified by checksum survive `rm -rf build` and fresh clones.
CACHE = Path(os.environ.get("LAB_CACHE",
                            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                            / "kvm-mmu-series")).resolve()

TREE = BUILD / "linux"
VANILLA_SRC = BUILD / "vanilla-src"
CHECK_SRC = BUILD / "check-src"        # make check's worktree, one commit at a time
