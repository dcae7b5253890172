"""make test's lanes: what starts first, and that parts really overlap."""
import threading

import pytest

from lab import lanes, testlist
from lab.progress import LabError


def _parts(spec):
    """spec: [(name, weight, after)] with functions that log when they run."""
    seen = []
    return seen, [lanes.Part(n, lambda n=n: seen.append(n) or n, w, tuple(a))
                  for n, w, a in spec]


# make test's shape: check, then each arch's build and its boots.
SHAPE = [("check", float("inf"), ()),
         ("arm64", 180, ()), ("arm64/vhe", 1500, ["arm64"]), ("arm64/eager", 800, ["arm64"]),
         ("x86_64", 180, ()), ("x86_64/tdp", 2000, ["x86_64"]),
         ("x86_64/legacy", 1200, ["x86_64"]), ("x86_64/shadow", 1100, ["x86_64"])]


def test_work_behind_a_build_is_its_heaviest_boot():
    _, parts = _parts(SHAPE)
    behind = lanes.work_behind(parts)
    assert behind["x86_64"] == 180 + 2000 and behind["arm64"] == 180 + 1500
    assert behind["x86_64/legacy"] == 1200


def test_start_order_check_then_the_longest_chain_then_its_boot():
    _, parts = _parts(SHAPE)
    # x86_64's build has the most behind it, and its TDP boot then outweighs
    # arm64's build (180 + 1500); the light boots go last.
    assert lanes.start_order(parts) == [
        "check", "x86_64", "x86_64/tdp", "arm64", "arm64/vhe", "x86_64/legacy",
        "x86_64/shadow", "arm64/eager"]


def test_x86_has_more_test_time_than_arm64():
    # what makes x86_64 build first, beside make check
    w = {}
    for a in ("arm64", "x86_64"):
        tl = testlist.load(a)
        w[a] = max(tl.test_seconds([b]) for b in tl.selected())
    assert w["x86_64"] > w["arm64"]


def test_a_part_starts_only_after_what_it_waits_for():
    seen, parts = _parts([("boot", 100, ["build"]), ("build", 1, [])])
    assert lanes.run(parts, lanes=2) == {"boot": "boot", "build": "build"}
    assert seen == ["build", "boot"]


def test_boots_of_one_build_run_side_by_side():
    both = threading.Barrier(2, timeout=5)   # broken (raises) unless both wait at once
    parts = [lanes.Part("build", lambda: "B"),
             lanes.Part("tdp", lambda: both.wait() is not None and "T", 1, ("build",)),
             lanes.Part("shadow", lambda: both.wait() is not None and "S", 1, ("build",))]
    assert lanes.run(parts, lanes=2) == {"build": "B", "tdp": "T", "shadow": "S"}


def test_one_lane_runs_in_start_order():
    seen, parts = _parts(SHAPE)
    got = lanes.run(parts, lanes=1)
    assert seen == lanes.start_order(parts)
    assert list(got) == [n for n, _, _ in SHAPE]      # results in the order given


def test_a_failing_part_is_raised():
    def boom():
        raise RuntimeError("arm64 lane broke")
    with pytest.raises(RuntimeError, match="arm64 lane broke"):
        lanes.run([lanes.Part("ok", lambda: 1), lanes.Part("bad", boom)], lanes=2)


def test_parts_that_cannot_start_are_an_error():
    with pytest.raises(ValueError, match="unknown `after`"):
        lanes.run([lanes.Part("boot", lambda: 1, 1, ("nobuild",))], lanes=2)
    with pytest.raises(ValueError, match="wait on each other"):
        lanes.run([lanes.Part("a", lambda: 1, 1, ("b",)),
                   lanes.Part("b", lambda: 1, 1, ("a",))], lanes=2)


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
