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
