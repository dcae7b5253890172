"""Statistics for A/B runs: mean, sample stdev, % change, and whether the
difference stands out of the run-to-run noise."""
import math
from dataclasses import dataclass


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def stdev(xs: list[float]) -> float:
    """Sample standard deviation (n - 1); 0 for fewer than two values."""
    if len(xs) < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


@dataclass(frozen=True)
class Comparison:
    a_mean: float
    a_stdev: float
    a_n: int
    b_mean: float
    b_stdev: float
    b_n: int
    change_pct: float       # (b - a) / a; nan for a baseline of 0 (see change)
    significant: bool       # |b - a| > 2 standard errors of the difference
    # Both sides' values are exact (declared, or the same in every run of
    # each): no noise to judge, and any difference is the difference.
    exact: bool = False

    @property
    def change(self) -> float:
        """b - a: what a comparison with a baseline of 0 can say."""
        return self.b_mean - self.a_mean

    @property
    def noise_pct(self) -> float:
        """Two standard errors of the difference, in % of the baseline mean:
        what a change must exceed to stand out (the spread a plot draws)."""
        se = _stderr(self.a_stdev, self.a_n, self.b_stdev, self.b_n)
        return 2 * se / abs(self.a_mean) * 100 if self.a_mean else 0.0

    @property
    def verdict(self) -> str:
        if self.exact:
            return "exact"
        if min(self.a_n, self.b_n) < 2:
            return "no noise estimate (1 run)"
        if not self.significant:
            return "within noise"
        return "faster" if self.change < 0 else "slower"


def _stderr(asd: float, an: int, bsd: float, bn: int) -> float:
    """The standard error of the difference of two means (Welch)."""
    return math.sqrt(asd ** 2 / an + bsd ** 2 / bn)


def repeats_exactly(xs: list[float]) -> bool:
    """Two or more runs, all the same value: a run-to-run noise of 0."""
    return len(xs) >= 2 and len(set(xs)) == 1


def compare(a: list[float], b: list[float], exact: bool = False) -> Comparison:
    """Compare runs a (baseline) and b; both lower-is-better times.

    exact: the caller knows both sides' values are exact (a count that
    repeats), unless two runs of a side differ. So are values that repeat
    exactly on both sides: either way any difference is significant, and
    no difference is none. Otherwise the
    noise test is Welch's: the difference of means against two standard
    errors of that difference (about 95 % for normal noise). With fewer than
    two runs on a side there is no noise estimate, and nothing is significant.
    """
    am, bm = mean(a), mean(b)
    asd, bsd = stdev(a), stdev(b)
    se = _stderr(asd, len(a), bsd, len(b))
    # the sign of the difference, a negative baseline's too (-16384 -> -8192: +50 %)
    change = (bm - am) / abs(am) * 100 if am else math.nan
    exact = ((exact and len(set(a)) == len(set(b)) == 1)
             or (repeats_exactly(a) and repeats_exactly(b)))
    if exact:
        significant = bm != am
    else:
        significant = len(a) >= 2 and len(b) >= 2 and abs(bm - am) > 2 * se
    return Comparison(am, asd, len(a), bm, bsd, len(b), change, significant, exact)


@dataclass(frozen=True)
class Line:
    """y = fixed + slope * x by least squares, and how much of y's spread
    it explains (r2: 1 when every point is on it)."""
    fixed: float
    slope: float
    r2: float

    def at(self, x: float) -> float:
        return self.fixed + self.slope * x


def fit_line(xs: list[float], ys: list[float]) -> Line | None:
    """The least-squares line through (xs, ys); None for fewer than two
    distinct xs, which no line fits."""
    if len(set(xs)) < 2:
        return None
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    fixed = my - slope * mx
    syy = sum((y - my) ** 2 for y in ys)
    sse = sum((y - fixed - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return Line(fixed, slope, 1 - sse / syy if syy else 1.0)
