"""The paper's significance test and improvement figure.

The paper compares the 3 per-seed scores of a method with the 3 of full
fine-tuning by a one-tailed t-test assuming equal variances.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from scipy import stats as _scipy


def ttest_greater(values: Sequence[float], baseline: Sequence[float]) -> float:
    """p-value that ``values`` exceed ``baseline`` (pooled-variance t-test, one-tailed).

    Returns NaN where the test is undefined (fewer than two values in a group,
    or no variance in either group) so such cells are never starred.
    """
    if len(values) < 2 or len(baseline) < 2:
        return math.nan
    if len(set(values)) == 1 and len(set(baseline)) == 1:
        return math.nan
    result = _scipy.ttest_ind(list(values), list(baseline), equal_var=True,
                              alternative="greater")
    return float(result.pvalue)


def stars(p: float | None) -> str:
    """The paper's marks: ** for p <= 0.01, * for p <= 0.05; none for a missing/NaN p."""
    if p is None or math.isnan(p):
        return ""
    if p <= 0.01:
        return "**"
    if p <= 0.05:
        return "*"
    return ""


def improvement(best: float, baseline: float) -> float | None:
    """Percent gain of the best method over full FT; None (printed "-") when it does not beat it.

    A zero baseline has no relative gain, so it also gives None.
    """
    if best <= baseline or baseline <= 0:
        return None
    return (best - baseline) / baseline * 100.0
