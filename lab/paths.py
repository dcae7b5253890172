"""Where things live. Everything generated goes under build/ (or LAB_BUILD).

The series is carried on several bases (bases/<name>.toml). A process works
on one, LAB_BASE (make BASE=<name>), else DEFAULT_BASE: its patches, lists,
bench data, trees, builds, logs and results are that base's own, and no
two bases share a tree or a kernel output. The config fragments, the arch
profiles and the venv are shared.
"""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASES = ROOT / "bases"
# The base of make and python3 -m lab without BASE= (bases/<name>.toml).
DEFAULT_BASE = "6.12"
BASE_NAME_RE = re.compile(r"[0-9a-z][0-9a-z._-]*")


def selected_base(environ=os.environ) -> str:
    """The base LAB_BASE names (empty: the default); cli checks it names a
    file of bases/ before any command runs."""
    return environ.get("LAB_BASE", "").strip() or DEFAULT_BASE


BASE = selected_base()
# A name that could leave its folder (LAB_BASE=../x) stays out of the paths
# below; cli refuses it, naming the bases.
_DIR = BASE if BASE_NAME_RE.fullmatch(BASE) and ".." not in BASE else "invalid-base"

BUILD = Path(os.environ.get("LAB_BUILD", ROOT / "build")).resolve()
VENV = BUILD / "venv"                  # shared by every base (make venv)
BASE_BUILD = BUILD / _DIR              # the base's trees, builds, logs and results
LOGS = BASE_BUILD / "logs"
RESULTS = BASE_BUILD / "results"
PATCHES = ROOT / "patches" / _DIR
CONFIGS = ROOT / "configs"
TESTLISTS = ROOT / "testlists" / _DIR
BENCH = ROOT / "bench" / _DIR
# Saved bench runs (committed): the default base's in results/, where the
# README links them, another base's in results/<base>/.
BENCH_RESULTS = ROOT / "results" if _DIR == DEFAULT_BASE else ROOT / "results" / _DIR
ARCH_PROFILES = ROOT / "lab" / "arch_profiles"
# Downloads verified by checksum survive `rm -rf build` and fresh clones.
CACHE = Path(os.environ.get("LAB_CACHE",
                            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                            / "kvm-mmu-series")).resolve()

TREE = BASE_BUILD / "linux"
VANILLA_SRC = BASE_BUILD / "vanilla-src"
CHECK_SRC = BASE_BUILD / "check-src"   # make check's worktree, one commit at a time
# Where 6.12's tree was before the bases had folders of their own.
OLD_TREE = BUILD / "linux"
