"""make test's lanes: what starts first, and that parts really overlap."""
import threading

import pytest

from lab import lanes, testlist


def test_longest_first_keeps_ties_in_order():
    assert lanes.longest_first(["arm64", "x86_64", "riscv"],
                               {"arm64": 10, "x86_64": 30}) == ["x86_64", "arm64", "riscv"]


def test_x86_has_more_test_time_than_arm64():
    # make test starts x86_64 beside make check and arm64 after it
    w = {a: testlist.load(a).test_seconds() for a in ("arm64", "x86_64")}
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


def test_test_seconds_counts_only_the_given_boots():
    tl = testlist.parse('''
[[boot]]
name = "one"
[[boot]]
name = "two"
[[test]]
name = "t1"
timeout = 10
[[test]]
name = "t2"
timeout = 7
boots = ["two"]
[[test]]
name = "t3"
skip = "cannot"
''', "x86_64", "inline")
    assert tl.test_seconds() == 10 + 10 + 7
    assert tl.test_seconds(["two"]) == 17


@pytest.mark.parametrize("jobs, parts, scale", [(1, 3, 1), (2, 3, 2), (2, 1, 1), (4, 3, 3)])
def test_timeouts_scale_with_the_parts_that_share_the_machine(jobs, parts, scale):
    assert lanes.timeout_scale(jobs, parts) == scale


def test_scaled_list_multiplies_every_timeout_and_the_budget():
    tl = testlist.load("x86_64")
    doubled = tl.scaled(2)
    assert [t.timeout * 2 for t in tl.tests] == [t.timeout for t in doubled.tests]
    assert [t.args for t in tl.tests] == [t.args for t in doubled.tests]
    assert doubled.budget("tdp", 60) > tl.budget("tdp", 60)
    assert tl.scaled(1) is tl
