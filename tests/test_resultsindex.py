"""results/README.md is made from the runs' results.json, never by hand."""
import json

from lab import resultsindex

RUN = {"scenarios": ["t/enable", "t/gone"],
       "values": {"t/enable": [
           {"metric": "enable", "group": "48-bit 4K", "vanilla": [10, 11, 9], "patched": [5, 5.5, 4.5]},
           {"metric": "enable", "group": "40-bit 16K", "vanilla": [10, 11, 9], "patched": [10, 12, 9]},
           {"metric": "passes", "group": "", "vanilla": [3, 3], "patched": [3]},
           {"metric": "faults", "group": "", "vanilla": [0, 0], "patched": [1570, 1570]},
           {"metric": "zapped", "group": "", "vanilla": [0, 0], "patched": [0, 0]},
           {"metric": "rmap", "group": "", "vanilla": [511, 511], "patched": [511, 511]}]},
       "errors": {"t/gone": ["boot 1/5: crashed"]}, "phases": []}


def test_a_row_per_scenario_and_metric_of_each_run(tmp_path):
    for run in ("2026-11-22/qemu-1", "2026-11-23/qemu-2"):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "results.json").write_text(json.dumps(RUN))
    (tmp_path / "2026-11-23/notes").mkdir()       # no results.json: not a run
    text = resultsindex.render(tmp_path)
    assert text.index("## 2026-11-23") < text.index("## 2026-11-22")    # latest first
    assert "[qemu-2](2026-11-23/qemu-2/report.md)" in text
    assert ("| t/enable | enable | vanilla → patched | 2 | -50.0 to +3.3 % | 1 faster, "
            "1 within noise | 0 |") in text
    assert ("| t/enable | passes | vanilla → patched | 1 | 0 | "
            "1 no noise estimate (1 run) | 0 |") in text
    assert "| t/enable | faults | vanilla → patched | 1 | +1570 (from 0) | 1 exact | 0 |" in text
    # no change is "0", not "+0.0 %" nor "+0 (from 0)" (qemu-100135's index)
    assert "| t/enable | zapped | vanilla → patched | 1 | 0 | 1 exact | 0 |" in text
    assert "| t/enable | rmap | vanilla → patched | 1 | 0 | 1 exact | 0 |" in text
    assert "| t/gone | - | - | 0 | no data | - | 1 |" in text


def test_the_committed_index_is_current():
    # make bench rewrites it; after a run saved by hand: python3 -m lab results-index
    assert (resultsindex.RESULTS / "README.md").read_text() == resultsindex.render()


def test_the_newest_runs_picture_is_the_latest_one(tmp_path):
    for run, png in (("2026-11-22/qemu-1", b"old"), ("2026-11-23/qemu-2", b"new")):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "results.json").write_text(json.dumps(RUN))
        (tmp_path / run / "change.png").write_bytes(png)
    assert resultsindex.latest_picture(tmp_path).read_bytes() == b"new"


def test_a_run_saved_without_a_picture_gets_one_drawn(tmp_path, matplotlib):
    from lab import scenarios
    [sc] = scenarios.parse('[[scenario]]\nlevel = "full"\nname = "enable"\narch = "arm64"\ncommand = "x"\n'
                           'metrics = [ { name = "enable", regex = "e: (\\\\d+)" } ]\n', "t.toml")
    (tmp_path / "2026-11-23/qemu-2").mkdir(parents=True)
    (tmp_path / "2026-11-23/qemu-2/results.json").write_text(json.dumps(RUN))
    dest = resultsindex.latest_picture(tmp_path, [sc])
    assert dest == tmp_path / resultsindex.LATEST
    assert (tmp_path / "2026-11-23/qemu-2/change.png").read_bytes() == dest.read_bytes()


def test_the_committed_latest_picture_is_the_newest_runs():
    newest = sorted(resultsindex.RESULTS.glob("*/*/change.png"))[-1]
    runs = sorted(resultsindex.RESULTS.glob("*/*/results.json"))
    assert newest.parent == runs[-1].parent, "the newest run has no change.png: lab results-index"
    assert (resultsindex.RESULTS / resultsindex.LATEST).read_bytes() == newest.read_bytes()


def test_the_index_judges_a_cell_as_the_report_does(tmp_path):
    """One boot a side of counts the scenario declares exact: the report
    says "exact", and so must the index (benchreport.comparison)."""
    from lab import scenarios
    [sc] = scenarios.parse('[[scenario]]\nname = "execute"\narch = "x86_64"\nclock = "icount"\n'
                           'exact_counts = true\ncommand = "x"\nmetrics = [ { name = "faults", '
                           'phase = "Executing from memory", stat = "pf_taken" } ]\n', "t.toml")
    run = {"scenarios": ["t/execute"], "sides": {"t/execute": ["before", "6.12"]},
           "values": {"t/execute": [{"metric": "faults", "group": "", "before": [32768],
                                     "6.12": [64]}]}, "errors": {}, "phases": []}
    (tmp_path / "2026-11-24/qemu-1").mkdir(parents=True)
    (tmp_path / "2026-11-24/qemu-1/results.json").write_text(json.dumps(run))
    assert "| -99.8 % | 1 exact |" in resultsindex.render(tmp_path, [sc])
    # without the scenario (bench/ dropped it) one boot a side has no noise estimate
    assert "| -99.8 % | 1 no noise estimate (1 run) |" in resultsindex.render(tmp_path, [])
