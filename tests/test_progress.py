import pytest

from lab import progress
from lab.progress import LabError


def test_a_second_build_of_one_directory_waits_then_says_who_holds_it(tmp_path):
    lock = tmp_path / "locks/x86_64-patched-debug.lock"
    with progress.exclusive(lock, "kernel x"):
        assert lock.read_text().strip().isdigit()
        with pytest.raises(LabError, match=r"kernel x: another build held .* \(its pid: \d+\)"):
            with progress.exclusive(lock, "kernel x", wait=0.1):
                pass
    with progress.exclusive(lock, "kernel x", wait=0.1):   # released: free again
        pass


def test_make_jobs_are_the_cores_and_one_unless_lab_jobs_says(monkeypatch):
    monkeypatch.setattr(progress.os, "cpu_count", lambda: 2)
    assert progress.jobs({}) == 3
    assert progress.jobs({"LAB_JOBS": "2"}) == 2
    with pytest.raises(LabError, match=r"^LAB_JOBS=0: a number of make jobs, 1 or more$"):
        progress.jobs({"LAB_JOBS": "0"})


def test_a_logged_command_past_its_timeout_is_killed_and_said(tmp_path):
    import time
    start = time.monotonic()
    with pytest.raises(LabError, match=r"^pip install: no end after 1 s, killed; log: "):
        progress.run_logged(["sleep", "30"], tmp_path / "x.log", "pip install", timeout=1)
    assert time.monotonic() - start < 10
