import math

import pytest

from lab import stats


def test_mean_and_sample_stdev_by_hand():
    xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert stats.mean(xs) == 5.0
    # squares of deviations sum to 32; 32 / 7
    assert stats.stdev(xs) == pytest.approx(math.sqrt(32 / 7))
    assert stats.stdev([3.0]) == 0.0


def test_compare_a_clear_improvement():
    c = stats.compare([10.0, 10.2, 9.8], [6.4, 6.6, 6.5])
    # (6.5 - 10) / 10
    assert c.change_pct == pytest.approx(-35.0)
    assert c.significant and c.verdict == "faster"


def test_compare_noise_is_not_a_result():
    c = stats.compare([10.0, 12.0, 8.0], [9.0, 11.0, 10.5])
    # difference 0.17, standard error sqrt(4/3 + 1.0833/3) = 1.30
    assert not c.significant and c.verdict == "within noise"


def test_single_runs_are_never_significant():
    assert not stats.compare([1.0], [2.0]).significant


def test_values_that_repeat_exactly_compare_exactly():
    """qemu-100135: 0.2871 s on both sides, sd 0, one side a few ns longer,
    was "+0.0 % slower" beyond noise; a difference of exact values is the
    difference, with no noise to be beyond."""
    c = stats.compare([0.287100001] * 3, [0.287100004] * 3)
    assert c.exact and c.verdict == "exact" and c.significant
    assert c.change == pytest.approx(3e-9)
    same = stats.compare([64.0] * 3, [64.0] * 3)
    assert same.exact and not same.significant


def test_declared_exact_needs_one_run_a_side():
    c = stats.compare([32768.0], [64.0], exact=True)
    assert c.exact and c.verdict == "exact" and c.change == -32704
    # one run a side without that: nothing to judge noise by, and it says so
    assert stats.compare([32768.0], [64.0]).verdict == "no noise estimate (1 run)"
    # values that differ boot to boot are not exact, whatever the scenario says
    assert not stats.compare([100.0, 101.0], [60.0, 60.0], exact=True).exact


def test_a_zero_baseline_has_an_absolute_change():
    c = stats.compare([0.0, 0.0, 0.0], [1570.0, 1570.0, 1570.0])
    assert math.isnan(c.change_pct) and c.change == 1570 and c.verdict == "exact"
