"""Interval estimators. Every estimate in a report names the method that made it.

* `clopper_pearson` — exact one-sided bounds for a proportion: every decision of an attribution
  reads exact bounds, so its error is at most what it states whatever the rates (no approximation
  that is lenient near 0 and 1). Against a known rate (the record itself, in the trace walk) the
  difference's bounds are the estimate's, mirrored.
* `difference_bounds` — bounds for the difference of two estimated proportions: the difference of
  exact bounds at half the error each (a union bound), conservative at every rate and under any
  dependence between the two samples; `paired_difference_bounds` the same over rollouts paired by
  their random streams, counting only the pairs that disagree.
* `proportion_interval` — the reported 95 % interval of a plan's failure rate, exact and split over
  a sequential strategy's looks, so that it keeps its level wherever the strategy stopped.
* `wilson` — the Wilson score interval, for estimates no decision reads (Shapley's coalitions, the
  fleet's shares).
* `DifferenceDistribution` — the parametric bootstrap of a difference from Agresti–Caffo adjusted
  proportions, computed exactly; the repair search's test reads it.
* `t_quantile` — Student's t quantiles (small-sample standard errors, see `_shapley`).
* `similarity` — normalised edit similarity of two JSON values (1.0 = identical).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from otel_replay.hashing import canonical_json

Z_95 = 1.959963984540054
WILSON = "wilson-score-95"
BOOTSTRAP = "agresti-caffo-parametric-bootstrap-exact-95"
#: the methods of the intervals an attribution reports and decides by
EXACT_PROPORTION = "clopper-pearson-exact-95-over-looks"
#: the 95 % interval an attribution reports for a plan's rate, for reading: exact at the rollouts
#: it ran, as though they had been fixed in advance (no decision reads it)
STATED_PROPORTION = "clopper-pearson-exact-95"
EXACT_DIFFERENCE = "difference-of-exact-bounds-bonferroni-paired"


def wilson(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for ``successes / n`` (``(0, 1)`` when ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # exact ends at 0/n and n/n: rounding would otherwise leave 0.9999999999999999 < 1.0
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _binomial_cdf(n: int, p: float) -> list[float]:
    """Cumulative probabilities of Binomial(n, p), 0 < p < 1, for exact inverse-CDF draws (log space,
    so large n neither overflows nor underflows)."""
    cdf: list[float] = []
    total = 0.0
    log_p, log_q, log_n = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    for k in range(n + 1):
        total += math.exp(
            log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q
        )
        cdf.append(total)
    cdf[-1] = 1.0
    return cdf


class DifferenceDistribution:
    """The parametric bootstrap of ``k1/n1 − k2/n2`` (module docstring), computed exactly rather
    than drawn: each side a binomial at its Agresti–Caffo adjusted rate, their difference's
    distribution summed over one side, its quantiles found by bisection over the differences that
    can occur (whole numbers ``x1·n2 − x2·n1`` over ``n1·n2``). No draws, so no seed and no
    Monte Carlo error, however deep the tail."""

    def __init__(self, k1: int, n1: int, k2: int, n2: int) -> None:
        self._n1, self._n2 = n1, n2
        if n1 == 0 or n2 == 0:
            return
        self._pmf1 = _binomial_pmf(n1, (k1 + 1) / (n1 + 2))
        cdf2 = _binomial_cdf(n2, (k2 + 1) / (n2 + 2))
        # survival2[x] = P(X2 >= x), for x in 0..n2+1
        self._survival2 = [1.0, *(1.0 - c for c in cdf2[:-1]), 0.0]

    def _cdf(self, t: int) -> float:
        """P(X1·n2 − X2·n1 <= t): for each x1, X2 must reach ceil((x1·n2 − t) / n1)."""
        n1, n2, survival2 = self._n1, self._n2, self._survival2
        total = 0.0
        for x1, p in enumerate(self._pmf1):
            need = -((t - x1 * n2) // n1)  # ceil((x1·n2 − t) / n1)
            total += p * survival2[min(n2 + 1, max(0, need))]
        return total

    def quantile(self, q: float) -> float:
        """The smallest difference whose cumulative probability reaches ``q``."""
        if self._n1 == 0 or self._n2 == 0:
            return -1.0 if q < 0.5 else 1.0
        low, high = -self._n1 * self._n2 - 1, self._n1 * self._n2  # cdf(low) < q <= cdf(high)
        while high - low > 1:
            middle = (low + high) // 2
            if self._cdf(middle) >= q:
                high = middle
            else:
                low = middle
        return high / (self._n1 * self._n2)

    def interval(self, coverage: float = 0.95) -> tuple[float, float]:
        """Central interval: ``(1 − coverage) / 2`` in each tail."""
        tail = (1 - coverage) / 2
        return self.quantile(tail), self.quantile(1 - tail)


def clopper_pearson(k: int, n: int, tail: float) -> tuple[float, float]:
    """Exact one-sided bounds for a binomial rate from ``k`` of ``n``, each wrong at most ``tail``
    of the time whatever the rate (Clopper–Pearson): the lowest and the highest rate under which
    ``k`` or more, respectively ``k`` or fewer, would be seen at least ``tail`` of the time.
    ``(0, 1)`` when ``n == 0``. Each end is the edge of its bisection bracket on the safe side, so
    rounding never makes a bound narrower than the exact one."""
    return _clopper_pearson(k, n, tail)


@functools.lru_cache(maxsize=1 << 16)
def _clopper_pearson(k: int, n: int, tail: float) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    # P(X >= k | p) = I_p(k, n - k + 1) rises with p; P(X <= k | p) = 1 - I_p(k + 1, n - k) falls
    low = 0.0 if k == 0 else _crossing(lambda p: _betainc(k, n - k + 1, p), tail, safe="low")
    high = (
        1.0 if k == n else _crossing(lambda p: 1.0 - _betainc(k + 1, n - k, p), tail, safe="high")
    )
    return low, high


def _crossing(f: Callable[[float], float], target: float, *, safe: str) -> float:
    """Where ``f``, rising on (0, 1) when ``safe == "low"`` and falling when ``"high"``, crosses
    ``target``, by bisection; the end of the final bracket on the ``safe`` side, so the bound is
    never narrower than the exact one."""
    rising = safe == "low"
    low, high = 0.0, 1.0
    while high - low > 1e-13:  # far below any rate a report shows (six decimals)
        middle = (low + high) / 2
        if (f(middle) < target) == rising:
            low = middle
        else:
            high = middle
    return low if rising else high


def _betainc(a: int, b: int, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` for whole ``a, b >= 1``: the
    binomial tail ``P(X >= a)`` of ``Binomial(a + b - 1, x)``. Its continued fraction (modified
    Lentz), on the side of ``x`` where it converges fast."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 400):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * fraction / a)


def paired_difference_bounds(b: int, c: int, n: int, tail: float) -> tuple[float, float]:
    """One-sided bounds for ``p1 − p2`` from ``n`` pairs of rollouts (rollout ``r`` of each plan,
    drawn from the same random streams), ``b`` of them failing under the first plan only and ``c``
    under the second only. Write ``D`` for the chance that a pair disagrees and ``θ`` for the
    chance that a disagreeing pair is of the first kind: ``p1 − p2 = D·(2θ − 1)``. The count of
    pairs that disagree is binomial in ``D``, and given it, ``b`` is binomial in ``θ``, so exact
    bounds for each at ``tail / 2`` hold together but for ``tail`` (a union bound), and each end
    of the difference is the product at the box's corner. Pairs that agree cost nothing: two plans
    that differ in no rollout are shown within ±margin at the rollouts `decisive_rollouts` gives,
    whatever their failure rate; and a step that only ever turns a rollout one way shows it
    matters as soon as the exact sign test on the disagreeing pairs does (``b`` of ``b`` at
    ``2^−b <= tail / 2``)."""
    d = b + c
    low_d, high_d = clopper_pearson(d, n, tail / 2)
    if d == 0:
        return -high_d, high_d
    low_t, high_t = clopper_pearson(b, d, tail / 2)
    least, most = 2 * low_t - 1, 2 * high_t - 1
    low = (low_d if least >= 0 else high_d) * least
    high = (high_d if most >= 0 else low_d) * most
    return max(-1.0, low), min(1.0, high)


def proportion_interval(k: int, n: int, looks: int = 1) -> tuple[float, float]:
    """The 95 % interval reported for a plan's failure rate: exact (Clopper–Pearson), and valid
    however a sequential strategy stopped: with ``looks`` possible stopping points, each end's
    2.5 % is split over them, so the interval at whichever look the strategy stopped misses the
    rate at most 5 % of the time (a union bound over the looks)."""
    return clopper_pearson(k, n, 0.025 / max(1, looks))


def difference_bounds(k1: int, n1: int, k2: int, n2: int, tail: float) -> tuple[float, float]:
    """One-sided bounds for ``p1 − p2`` from two independent binomial samples, each end wrong at
    most ``tail`` of the time whatever the two rates: the difference of exact bounds, each at
    ``tail / 2`` (``p1 − p2 <= U1 − L2`` fails only if ``p1 > U1`` or ``p2 < L2``; a union bound).
    Conservative by construction, and never collapsing at ``0/n`` or ``n/n`` as plug-in and
    bootstrap intervals do."""
    low1, high1 = clopper_pearson(k1, n1, tail / 2)
    low2, high2 = clopper_pearson(k2, n2, tail / 2)
    return max(-1.0, low1 - high2), min(1.0, high1 - low2)


def decisive_rollouts(margin: float, tail: float, *, known: bool = False) -> int:
    """The fewest rollouts per plan at which "no effect" can be shown at all. Exact bounds are
    narrowest at ``n/n`` (and ``0/n``), where the one-sided bound at ``tail`` is ``tail^(1/n)``
    from the end: against a ``known`` rate (the record) that bound must come within the margin,
    ``(1 − margin)^n <= tail``; between two estimated plans each side gets ``tail / 2``
    (`difference_bounds`), ``(1 − margin)^n <= tail / 2``. Below it every later step stays
    undecided, so no Point of Commitment can be named."""
    share = tail if known else tail / 2
    return max(1, math.ceil(math.log(share) / math.log1p(-margin) - 1e-9))


def _binomial_pmf(n: int, p: float) -> list[float]:
    cdf = _binomial_cdf(n, p)
    return [cdf[0], *(cdf[k] - cdf[k - 1] for k in range(1, n + 1))]


def rollouts_needed(effect: float, half_width: float, n: int, floor: int = 1) -> int | None:
    """Rollouts per plan that would shrink an interval of ``half_width`` (at ``n``) below ``effect``.

    A rough guide, never less than twice the budget that just failed to decide nor than ``floor``
    (`decisive_rollouts`); None when the effect is too small for any budget to resolve sensibly.
    """
    if effect < 0.01 or half_width <= 0:
        return None
    needed = math.ceil(n * (half_width / effect) ** 2)
    return max(needed, 2 * n, floor) if needed <= 10_000_000 else None


def _t_central(t: float, df: int) -> float:
    """``P(|T| < t)`` for Student's t with ``df`` (whole) degrees of freedom: the finite sums of
    Abramowitz & Stegun 26.7.3 (odd ``df``) and 26.7.4 (even ``df``)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    c2 = cos * cos
    term = total = 1.0
    if df % 2 == 0:
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return sin * total
    if df == 1:
        return 2 * theta / math.pi
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + sin * cos * total)


@functools.cache
def t_quantile(probability: float, df: int) -> float:
    """The ``probability`` quantile (above one half) of Student's t with ``df`` degrees of freedom,
    by bisection on `_t_central` (``t_quantile(0.975, 4)`` = 2.776…)."""
    if df < 1 or not 0.5 < probability < 1:
        raise ValueError(
            f"t_quantile needs df >= 1 and 0.5 < probability < 1, got {df}, {probability}"
        )
    central = 2 * probability - 1
    low, high = 0.0, 2.0
    while _t_central(high, df) < central:
        low, high = high, 2 * high
    for _ in range(200):
        middle = (low + high) / 2
        if _t_central(middle, df) < central:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * high:
            break
    return (low + high) / 2


def mean_and_se(values: list[float]) -> tuple[float, float]:
    """Sample mean and its standard error (0 for fewer than two values)."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def similarity(a: Any, b: Any, limit: int = 20_000) -> float:
    """1 − Levenshtein distance / longer length, over canonical JSON (texts cut at ``limit``)."""
    x = canonical_json(a).decode()[:limit]
    y = canonical_json(b).decode()[:limit]
    if x == y:
        return 1.0
    return 1.0 - levenshtein(x, y) / max(len(x), len(y))


def levenshtein(x: str, y: str) -> int:
    """Edit distance by Myers' bit-parallel algorithm (Hyyrö's formulation): one pass over the
    longer text with the shorter as a bit vector, so two 4 kB texts take milliseconds, not seconds."""
    if len(x) < len(y):
        x, y = y, x
    m = len(y)
    if m == 0:
        return len(x)
    positions: dict[str, int] = {}
    for i, char in enumerate(y):
        positions[char] = positions.get(char, 0) | (1 << i)
    full = (1 << m) - 1
    top = 1 << (m - 1)
    plus, minus, distance = full, 0, m
    for char in x:
        eq = positions.get(char, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        h_plus = minus | (~(xh | plus) & full)
        h_minus = plus & xh
        if h_plus & top:
            distance += 1
        elif h_minus & top:
            distance -= 1
        h_plus = ((h_plus << 1) | 1) & full
        h_minus = (h_minus << 1) & full
        plus = h_minus | (~(xv | h_plus) & full)
        minus = h_plus & xv
    return distance
