"""change.png's decisions, without looking at the image: which panel a bar
is in, which bars are grey, and where the seed's marker goes."""
import pytest

from lab import bench, benchplot, scenarios

SCENARIOS = r'''
topic = "t"
[[scenario]]
level = "full"
name = "aging"
arch = "x86_64"
command = "access_tracking_perf_test -p"
seed = "64 vCPUs: avg pass 15.95 s (1 pass) -> 0.527 s (35 passes); vCPU wall 3.04 -> 3.01 s"
metrics = [
  { name = "instructions", regex = 'insns: (\d+)', unit = "count" },
  { name = "aging pass (avg)", regex = 'pass: (\d+\.\d+)s' },
  { name = "vCPU wall time (slowest)", regex = 'wall: (\d+\.\d+)s' },
]
[[scenario]]
level = "full"
name = "split"
arch = "x86_64"
command = "x"
seed = "execute 2.90 s (zap, before) -> 0.112 s (split) (-96 %); populate 2.75 -> 2.73 s"
metrics = [ { name = "populate", regex = 'p: (\d+)' }, { name = "execute", regex = 'e: (\d+)' } ]
[[scenario]]
level = "full"
name = "percent"
arch = "arm64"
command = "x"
seed = "-35.47 % (stdev 5.63 %)"
metrics = [ { name = "enable", regex = 'e: (\d+)' } ]
[[scenario]]
level = "full"
name = "none"
arch = "x86_64"
command = "x"
seed = "no 1-vCPU row; 2 vCPUs: 0.0196 s -> 0.0061 s (-69 %)"
metrics = [ { name = "t", regex = 't: (\d+)' } ]
'''


@pytest.fixture
def scs():
    return {s.name: s for s in scenarios.parse(SCENARIOS, "t.toml")}


def test_the_seed_figure_goes_to_the_metric_it_names(scs):
    got = {n: {m: round(p, 1) for m, p in benchplot.seed_changes(s).items()}
           for n, s in scs.items()}
    assert got == {
        # the first unnamed figure to the first time metric, never to a count
        "aging": {"aging pass (avg)": -96.7, "vCPU wall time (slowest)": -1.0},
        "split": {"execute": -96.1, "populate": -0.7},
        "percent": {"enable": -35.5},
        # "no ...": the seed has no figure for this scenario
        "none": {}}


def results(key, cells):
    res = bench.Results()
    for metric, (a, b) in cells.items():
        res.values[key][(metric, "")]["vanilla"] = a
        res.values[key][(metric, "")]["patched"] = b
    return res


def test_bars_within_noise_are_grey_and_counts_have_their_own_panel(scs):
    res = results("t/aging", {
        # +11 % but the runs scatter: within noise, grey, not a red regression
        "aging pass (avg)": ([1.0, 1.5, 0.8, 1.2], [1.3, 0.9, 1.6, 1.2]),
        # slower beyond noise: red
        "vCPU wall time (slowest)": ([3.0, 3.01, 2.99], [3.3, 3.31, 3.29]),
        # a count beyond noise: blue, in the counts panel
        "instructions": ([100.0, 100.0, 101.0], [60.0, 60.0, 61.0])})
    got = {b.label.split(": ")[1]: b for b in benchplot.bars([scs["aging"]], res)}
    pass_, wall, insns = (got["aging pass (avg)"], got["vCPU wall time (slowest)"],
                          got["instructions"])
    assert pass_.change == pytest.approx(11.1, abs=0.1) and pass_.colour == benchplot.GREY
    assert pass_.spread > abs(pass_.change)      # the spread crosses zero: why it is grey
    assert (wall.panel, wall.colour) == (scenarios.HOST_TIME, benchplot.RED)
    assert (insns.panel, insns.colour, insns.seed) == (scenarios.COUNT, benchplot.BLUE, None)
    assert round(pass_.seed, 1) == -96.7 and round(wall.seed, 1) == -1.0


def test_faster_beyond_noise_is_green_and_one_run_a_side_has_its_own_colour(scs):
    res = results("t/split", {"execute": ([2.0, 2.1, 2.0], [1.0, 1.1, 1.0]),
                              "populate": ([2.0], [1.0])})
    got = {b.label: b for b in benchplot.bars([scs["split"]], res)}
    assert got["t/split: execute"].colour == benchplot.GREEN
    # no noise estimate from one run a side: neither "within noise" (grey)
    # nor a verdict, however large the change
    assert got["t/split: populate"].colour == benchplot.ORANGE
    assert benchplot.MEANINGS[benchplot.ORANGE].startswith("no noise estimate")


def test_two_saved_runs_have_no_seed_and_name_their_sides(scs):
    res = bench.Results()
    res.values["t/percent"][("enable", "")].update({"A": [1.0, 1.1], "B": [0.5, 0.6]})
    [bar] = benchplot.bars([scs["percent"]], res, ("A", "B"))
    assert (bar.seed, bar.sides) == (None, ("A", "B"))


def test_each_kind_of_figure_has_its_panel_and_exact_ones_no_spread():
    sc, = scenarios.parse(r'''
[[scenario]]
level = "full"
name = "execute"
arch = "x86_64"
clock = "icount"
exact_counts = true
command = "x"
metrics = [ { name = "execute", regex = 'e: (\d+\.\d+)s' },
            { name = "faults", phase = "Executing from memory", stat = "pf_taken" },
            { name = "fast faults", phase = "Executing from memory", stat = "pf_fast" } ]
''', "t.toml")
    res = results("t/execute", {"execute": ([0.18, 0.19], [0.006, 0.0061]),
                                "faults": ([32768.0], [64.0]),
                                # a baseline of 0: no % change, no bar
                                "fast faults": ([0.0], [1570.0])})
    got = {b.label.split(": ")[1]: b for b in benchplot.bars([sc], res)}
    assert got["execute"].panel == scenarios.EMULATED_TIME
    assert got["execute"].colour == benchplot.GREEN and not got["execute"].note
    # exact counts: a colour of their own, whose legend says exact, not "beyond noise"
    assert (got["faults"].panel, got["faults"].spread, got["faults"].colour) == (
        scenarios.COUNT, 0.0, benchplot.PURPLE)
    assert "noise" not in benchplot.MEANINGS[benchplot.PURPLE].split(":")[0]
    # from 0: no bar, the difference written as report.md writes it
    assert (got["fast faults"].change, got["fast faults"].note) == (0.0, "+1570 (from 0)")


def test_draw_writes_a_png(tmp_path, scs, matplotlib):
    res = results("t/split", {"execute": ([2.0, 2.1], [1.0, 1.1]),
                              "populate": ([0.0, 0.0], [1.0, 1.0])})
    dest = benchplot.draw(benchplot.bars([scs["split"]], res), tmp_path / "change.png")
    assert dest.read_bytes().startswith(b"\x89PNG")
    assert benchplot.draw([], tmp_path / "none.png") is None
