import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The tests read the checkout's data of the default base, whatever base the
# run that calls them works on (make test BASE=7.3 exports LAB_BASE=7.3):
# lab/paths.py places everything when first imported, after this.
os.environ.pop("LAB_BASE", None)

import pytest  # noqa: E402


@pytest.fixture
def matplotlib():
    """Skip, naming the package, where it is missing (python3 -m pytest outside
    build/venv), as test_lint does for ruff and shellcheck."""
    return pytest.importorskip("matplotlib", reason="matplotlib is not installed: make venv "
                               "installs it (requirements.txt)")
