"""Static checks in make pytest: ruff on the harness (ruff.toml says which
rules and why), shellcheck on the guest's shell files. A tool that is not
installed skips its test with one line naming how to get it."""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab import paths

GUEST = paths.ROOT / "lab" / "guest"


def failed(argv: list[str]) -> str:
    proc = subprocess.run(argv, cwd=paths.ROOT, capture_output=True, text=True)
    return "" if proc.returncode == 0 else proc.stdout + proc.stderr


def test_ruff():
    if not importlib.util.find_spec("ruff"):
        pytest.skip("ruff is not installed: make venv installs it (requirements.txt)")
    assert not failed([sys.executable, "-m", "ruff", "check", "--no-cache", "lab", "tests"])


def test_shellcheck_of_the_guest_files():
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed: make deps installs it (apt: shellcheck)")
    files = sorted(str(Path(f).relative_to(paths.ROOT)) for f in GUEST.rglob("*") if f.is_file())
    assert not failed(["shellcheck", *files])
