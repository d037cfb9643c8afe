"""The paper's one-tailed pooled t-test, star marks and improvement percent."""
from __future__ import annotations

import math

import pytest
from scipy.stats import t as t_dist

from peftir.evaluation.stats import improvement, stars, ttest_greater


def pooled_t_p(a: list[float], b: list[float]) -> float:
    """Textbook Student t-test (equal variances), upper tail."""
    n1, n2 = len(a), len(b)
    m1, m2 = sum(a) / n1, sum(b) / n2
    v1 = sum((x - m1) ** 2 for x in a) / (n1 - 1)
    v2 = sum((x - m2) ** 2 for x in b) / (n2 - 1)
    pooled = ((n1 - 1) * v1 + (n2 - 1) * v2) / (n1 + n2 - 2)
    t = (m1 - m2) / math.sqrt(pooled * (1 / n1 + 1 / n2))
    return float(t_dist.sf(t, n1 + n2 - 2))


@pytest.mark.parametrize("a, b", [([0.41, 0.40, 0.42], [0.39, 0.40, 0.38]),
                                  ([0.30, 0.35, 0.28], [0.31, 0.29, 0.33]),
                                  ([0.5, 0.6, 0.55, 0.52], [0.45, 0.47, 0.5])])
def test_matches_pooled_variance_formula(a: list[float], b: list[float]) -> None:
    assert ttest_greater(a, b) == pytest.approx(pooled_t_p(a, b), rel=1e-9)


def test_direction_is_method_better_than_baseline() -> None:
    better, base = [0.50, 0.51, 0.52], [0.40, 0.41, 0.42]
    assert ttest_greater(better, base) < 0.01
    assert ttest_greater(base, better) > 0.5


@pytest.mark.parametrize("a, b", [([0.5, 0.5, 0.5], [0.4, 0.4, 0.4]), ([0.5], [0.4, 0.3]),
                                  ([0.5, 0.6], [0.4])])
def test_undefined_tests_are_nan_and_unstarred(a: list[float], b: list[float]) -> None:
    p = ttest_greater(a, b)
    assert math.isnan(p)
    assert stars(p) == ""


@pytest.mark.parametrize("p, mark", [(0.001, "**"), (0.01, "**"), (0.0100001, "*"),
                                     (0.05, "*"), (0.0500001, ""), (0.7, ""), (None, "")])
def test_star_thresholds(p: float | None, mark: str) -> None:
    assert stars(p) == mark


def test_improvement_percent_or_none() -> None:
    assert improvement(0.4012, 0.3966) == pytest.approx((0.4012 - 0.3966) / 0.3966 * 100)
    assert f"{improvement(0.4012, 0.3966):.2f}%" == "1.16%"
    assert improvement(0.3966, 0.3966) is None
    assert improvement(0.30, 0.3966) is None
