import json
import shutil
from pathlib import Path

import pytest

from lab import cli, ktap, passsets, paths, report, testrun
from lab.progress import LabError

FIX = Path(__file__).parent / "fixtures" / "passsets"
PATCHED = FIX / "test-20261101-100000"   # summary.json without a variant
VANILLA = FIX / "test-20261102-100000"


def lines_of(text: str, boot: str) -> list[str]:
    """The test lines and the counts line of one boot."""
    out = text.splitlines()
    i = out.index(boot)
    rest = out[i + 1:]
    end = next(n for n, ln in enumerate(rest) if ln.startswith(f"  {boot}: "))
    return rest[:end + 1]


def test_an_old_summary_without_a_variant_is_a_patched_run():
    assert passsets.load(PATCHED).variant == "patched"
    assert passsets.load(VANILLA).variant == "vanilla"


def test_the_same_pass_sets_differ_nowhere():
    run = passsets.load(PATCHED)
    text = passsets.render(run, run)
    assert not any(ln.startswith("  * ") for ln in text.splitlines())
    assert text.count(" 0 differ") == len(run.boots)


def test_a_boot_with_the_same_results_is_unmarked():
    text = passsets.render(passsets.load(PATCHED), passsets.load(VANILLA))
    assert lines_of(text, "x86_64/harness") == [
        "    init panic is reported, not waited on  pass  | pass",
        "  x86_64/harness: A 1 passed, 0 failed, 0 skipped; B 1 passed, 0 failed, 0 skipped; "
        "0 differ"]


def test_a_test_only_the_series_has_is_marked_with_the_vanilla_skip_reason():
    tdp = lines_of(passsets.render(passsets.load(PATCHED), passsets.load(VANILLA)), "x86_64/tdp")
    assert "  * aging_stress_test          pass                         " \
           "| skip: not in this variant" in tdp
    # The same skip on both sides, for a reason of TCG's: not a difference.
    assert any(ln.startswith("    vmx_nested_tdp_test") for ln in tdp)
    assert tdp[-1].endswith("B 2 passed, 0 failed, 2 skipped; 2 differ")


def test_a_failure_on_one_side_is_marked_and_counted():
    shadow = lines_of(passsets.render(passsets.load(PATCHED), passsets.load(VANILLA)),
                      "x86_64/shadow")
    assert shadow[0].startswith("  * dirty_log_test     fail: exit=254")
    assert shadow[0].endswith("| pass")
    assert "A 1 passed, 1 failed, 0 skipped" in shadow[-1]


def test_a_flaky_pass_beside_a_pass_is_a_difference():
    a = ktap.Result("t", ktap.FLAKY, "exit=254, then passed when run again")
    assert passsets.differs(a, ktap.Result("t", ktap.PASS))
    assert not passsets.differs(ktap.Result("t", ktap.FAIL, "x"), ktap.Result("t", ktap.FAIL, "y"))


def test_a_boot_on_one_side_only_is_absent_on_the_other():
    kasan = lines_of(passsets.render(passsets.load(PATCHED), passsets.load(VANILLA)),
                     "x86_64/kasan-tdp")
    assert kasan == ["  * aging_stress_test  pass  | absent",
                     "  x86_64/kasan-tdp: A 1 passed, 0 failed, 0 skipped; B absent; 1 differ"]


def test_the_summary_names_the_variant_and_reads_back():
    rep = testrun.BootReport("arm64/vhe", rows=[("arm64/vhe: dirty_log_test",
                                                 ktap.Result("dirty_log_test", ktap.PASS))])
    data = report.summary([rep], "vanilla")
    assert data[0]["variant"] == "vanilla"
    run = passsets.from_summary(json.loads(json.dumps(data)), "x")
    assert run.variant == "vanilla"
    assert run.boots == {"arm64/vhe": {"dirty_log_test": ktap.Result("dirty_log_test", "pass")}}
    assert run.arches == {"arm64"}


def results(tmp_path, *names) -> Path:
    """A results directory with copies of the fixtures under other names."""
    for name, src in names:
        shutil.copytree(src, tmp_path / name)
    return tmp_path


def test_the_newest_patched_run_of_the_same_arches_is_the_one_compared_with(tmp_path):
    res = results(tmp_path, ("test-20261101-090000", PATCHED), ("test-20261101-100000", PATCHED),
                  ("test-20261103-100000", VANILLA), ("run-20261104-100000", PATCHED))
    # Another arch's newer run is no match.
    (res / "test-20261103-110000").mkdir()
    (res / "test-20261103-110000" / "summary.json").write_text(json.dumps(
        [{"boot": "arm64/vhe", "tests": []}]))
    (res / "test-20261105-100000").mkdir()  # cut short: no summary
    assert passsets.newest_patched({"x86_64"}, res) == res / "test-20261101-100000"
    assert passsets.newest_patched({"arm64", "x86_64"}, res) is None


def test_a_vanilla_make_test_ends_with_the_comparison(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli.suite, "run", lambda *a: [
        testrun.BootReport("x86_64/tdp", rows=[
            ("x86_64/tdp: aging_stress_test",
             ktap.Result("aging_stress_test", ktap.SKIP, "not in this variant"))])])
    monkeypatch.setattr(cli.report, "save", lambda *a: None)
    monkeypatch.setattr(passsets.paths, "RESULTS", tmp_path)
    cli.main(["test", "--arch", "x86_64", "--variant", "vanilla", "--no-check"])
    assert "compared with" not in capsys.readouterr().out   # no patched run yet

    results(tmp_path, ("test-20261101-100000", PATCHED))
    cli.main(["test", "--arch", "x86_64", "--variant", "vanilla", "--no-check"])
    out = capsys.readouterr().out
    assert (f"passes: compared with {tmp_path / 'test-20261101-100000'}, the newest patched "
            f"run of x86_64\n") in out
    assert "  * aging_stress_test          pass                         " \
           "| skip: not in this variant" in out


def test_lab_passes_prints_the_two_runs(capsys):
    assert cli.main(["passes", str(PATCHED), str(VANILLA)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"A: {PATCHED} (patched)\nB: {VANILLA} (vanilla)\n")


def test_runs_of_two_bases_say_their_base():
    rows = [("x86_64/tdp: dirty_log_perf_test", ktap.Result("dirty_log_perf_test", ktap.PASS))]
    data = report.summary([testrun.BootReport("x86_64/tdp", rows=rows)], "patched")
    assert data[0]["base"] == paths.BASE
    six = passsets.from_summary([{**data[0], "base": "6.12"}], "A")
    seven = passsets.from_summary([{**data[0], "base": "7.3", "variant": "vanilla"}], "B")
    older = passsets.from_summary([{k: v for k, v in data[0].items() if k != "base"}], "C")
    assert (six.base, seven.base, older.base) == ("6.12", "7.3", "6.12")
    assert passsets.render(six, seven).splitlines()[:2] == [
        "A: A (patched, base 6.12)", "B: B (vanilla, base 7.3)"]
    assert passsets.render(six, older).splitlines()[:2] == ["A: A (patched)", "B: C (patched)"]
    with pytest.raises(LabError, match="boots of several bases: 6.12, 7.3"):
        passsets.from_summary([{**data[0], "base": "6.12"}, {**data[0], "base": "7.3"}], "D")
