"""The papers' significance tests and improvement figure.

The Semi-Siamese paper compares the 3 per-seed scores of a method with the 3 of full
fine-tuning by a one-tailed t-test assuming equal variances; Litschko et al. (modular
cross-lingual rerankers) compare per-query scores with the pre-ranker's by an unpaired
two-sided t-test, marking p <= 0.05 only.
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


def ttest_two_sided(values: Sequence[float], baseline: Sequence[float]) -> float:
    """p-value that ``values`` and ``baseline`` differ in mean (pooled-variance t-test, unpaired, two-sided).

    Unpaired although both groups score the same queries: that is the authors' test. NaN where it is
    undefined, as for ``ttest_greater``, so such cells are never starred.
    """
    if len(values) < 2 or len(baseline) < 2:
        return math.nan
    if len(set(values)) == 1 and len(set(baseline)) == 1:
        return math.nan
    return float(_scipy.ttest_ind(list(values), list(baseline), equal_var=True).pvalue)


def star(p: float | None, alpha: float = 0.05) -> str:
    """One mark, * for p <= ``alpha`` (Litschko et al. print no other level); none for a missing/NaN p."""
    return "*" if p is not None and not math.isnan(p) and p <= alpha else ""


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
