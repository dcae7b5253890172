"""make test's lanes: what starts first, and that parts really overlap."""
import threading

import pytest

from lab import lanes, testlist
from lab.progress import LabError


def test_longest_first_keeps_ties_in_order():
    assert lanes.longest_first(["arm64", "x86_64", "riscv"],
                               {"arm64": 10, "x86_64": 30}) == ["x86_64", "arm64", "riscv"]


def test_x86_has_more_test_time_than_arm64():
    # make test starts x86_64 beside make check and arm64 after it
    w = {a: (tl := testlist.load(a)).test_seconds(tl.selected()) for a in ("arm64", "x86_64")}
    assert lanes.longest_first(["arm64", "x86_64"], w) == ["x86_64", "arm64"]


def test_two_lanes_run_two_parts_at_once():
    both = threading.Barrier(2, timeout=5)   # broken (raises) unless both wait at once
    got = lanes.run([("a", lambda: both.wait() is not None and "A"),
                     ("b", lambda: both.wait() is not None and "B")], lanes=2)
    assert got == {"a": "A", "b": "B"}


def test_one_lane_runs_in_order():
    seen = []
    got = lanes.run([(n, lambda n=n: seen.append(n) or n) for n in "xyz"], lanes=1)
    assert seen == ["x", "y", "z"] and list(got) == ["x", "y", "z"]


def test_a_failing_part_is_raised():
    def boom():
        raise RuntimeError("arm64 lane broke")
    with pytest.raises(RuntimeError, match="arm64 lane broke"):
        lanes.run([("ok", lambda: 1), ("bad", boom)], lanes=2)


def test_boots_selected_and_their_test_seconds():
    tl = testlist.parse('''
[[boot]]
name = "one"
[[boot]]
name = "two"
[[boot]]
name = "matrix"
full = true
[[test]]
name = "t1"
timeout = 10
boots = ["one", "two"]
[[test]]
name = "t2"
timeout = 7
boots = ["two", "matrix"]
[[test]]
name = "t3"
skip = "cannot"
''', "x86_64", "inline")
    # the default run leaves the full boot out; FULL=1 or its name runs it
    assert [b.name for b in tl.selected()] == ["one", "two"]
    assert [b.name for b in tl.selected(full=True)] == ["one", "two", "matrix"]
    assert [b.name for b in tl.selected(["matrix"])] == ["matrix"]
    with pytest.raises(LabError, match="no boot tdp; its boots: one, two, matrix"):
        tl.selected(["tdp"])
    assert tl.test_seconds(tl.selected()) == 10 + 10 + 7
    assert tl.test_seconds(tl.selected(["two"])) == 17
    assert tl.test_seconds(tl.selected(full=True)) == 10 + 10 + 7 + 7
