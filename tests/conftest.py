import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest  # noqa: E402


@pytest.fixture
def matplotlib():
    """Skip, naming the package, where it is missing (python3 -m pytest outside
    build/venv), as test_lint does for ruff and shellcheck."""
    return pytest.importorskip("matplotlib", reason="matplotlib is not installed: make venv "
                               "installs it (requirements.txt)")
