"""The significance companion: paired where two cells score the same queries (a query's score its mean over seeds),
unpaired where runs pool collections that share query ids; p-values, intervals and effect sizes against scipy and
hand computations; Holm and Bonferroni over the table's family against statsmodels; seeded permutation tests."""
from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from peftir.evaluation.significance import compare, family, query_scores, significance_table

SETTINGS = {"test": "t", "correction": "holm", "alpha": 0.05, "permutations": 2000, "seed": 42}


def runs(offset: float, seed_of_rng: int, seeds=(1, 2, 3), folds=("1", "2"), queries: int = 12) -> list[dict]:
    rng = random.Random(seed_of_rng)
    def score() -> float:
        return min(1.0, max(0.0, 0.4 + offset + rng.gauss(0, 0.15)))

    return [{"fold": fold, "seed": seed, "per_query": {f"{fold}-{q}": score() for q in range(queries)}}
            for seed in seeds for fold in folds]


def cell(name: str, offset: float, rng: int, against: str | None = None, stars: str = "") -> dict:
    made = {"cell": name, "runs": runs(offset, rng), "stars": stars, "p_value": 0.01 if stars else 0.5}
    return made | ({"ttest": {"against": against}} if against else {})


BASE = cell("r:full:d:P@20", 0.0, 1)
BETTER = cell("r:lora:d:P@20", 0.12, 2, "r:full:d:P@20", "**")
SAME = cell("r:prefix:d:P@20", 0.0, 3, "r:full:d:P@20", "*")
WORSE = cell("r:prompt:d:P@20", -0.02, 4, "r:full:d:P@20")


def test_a_querys_score_is_its_mean_over_seeds_and_pooled_collections_cannot_be_paired():
    scores = query_scores(BASE)
    assert len(scores) == 24
    assert scores["1-0"] == pytest.approx(np.mean([run["per_query"]["1-0"] for run in BASE["runs"]
                                                   if "1-0" in run["per_query"]]))
    pooled = {"cell": "x", "runs": [{"seed": 1, "per_query": {"q1": 0.1}}, {"seed": 1, "per_query": {"q1": 0.3}}]}
    assert query_scores(pooled) is None


def test_a_paired_comparison_is_scipys_paired_t_test_with_its_interval_and_d_z():
    result = compare(BETTER, BASE, SETTINGS)
    mine, theirs = query_scores(BETTER), query_scores(BASE)
    x = np.array([mine[q] for q in sorted(mine)])
    y = np.array([theirs[q] for q in sorted(mine)])
    expected = stats.ttest_rel(x, y)
    assert result["paired"] and result["n"] == 24
    assert result["p_t"] == pytest.approx(expected.pvalue)
    assert result["mean_difference"] == pytest.approx(np.mean(x - y))
    low, high = expected.confidence_interval(0.95)
    assert (result["ci_low"], result["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert result["effect_size"] == pytest.approx(np.mean(x - y) / np.std(x - y, ddof=1))
    assert 0 < result["p_permutation"] < 0.05 and result["p_t"] < 0.05


def test_the_permutation_test_is_seeded():
    assert compare(SAME, BASE, SETTINGS)["p_permutation"] == compare(SAME, BASE, SETTINGS)["p_permutation"]
    other = compare(SAME, BASE, {**SETTINGS, "seed": 7})["p_permutation"]
    assert other == pytest.approx(compare(SAME, BASE, SETTINGS)["p_permutation"], abs=0.05)


def test_cells_that_do_not_share_queries_are_compared_unpaired_with_welch():
    other = {"cell": "r:x:d:P@20", "runs": runs(0.1, 9, queries=8), "ttest": {"against": BASE["cell"]}, "stars": ""}
    result = compare(other, BASE, SETTINGS)
    x = [v for run in other["runs"] for _, v in sorted(run["per_query"].items())]
    y = [v for run in BASE["runs"] for _, v in sorted(run["per_query"].items())]
    assert not result["paired"] and (result["n"], result["n_baseline"]) == (len(x), len(y))
    assert result["p_t"] == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)
    assert result["effect_size_kind"] == "Cohen's d (pooled SD)"


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_the_familys_p_values_are_corrected_as_statsmodels_corrects_them(method):
    table = significance_table([BASE, BETTER, SAME, WORSE], {**SETTINGS, "correction": method}, "t")
    raw = [row["p_t"] for row in table["comparisons"]]
    assert [row["p_adjusted"] for row in table["comparisons"]] == pytest.approx(
        list(multipletests(raw, method=method)[1]))
    assert [row["significant"] for row in table["comparisons"]] == [p <= 0.05 for p in
                                                                    multipletests(raw, method=method)[1]]


def test_the_family_is_what_the_stars_compare_and_the_summary_counts_kept_and_lost_stars():
    assert [(c["cell"], b["cell"]) for c, b in family([BASE, BETTER, SAME, WORSE])] == [
        (BETTER["cell"], BASE["cell"]), (SAME["cell"], BASE["cell"]), (WORSE["cell"], BASE["cell"])]
    summary = significance_table([BASE, BETTER, SAME, WORSE], SETTINGS, "t")["summary"]
    assert summary == {"family": 3, "paired": 3, "published_significant": 2, "significant_after_correction": 1,
                       "kept": 1, "lost": 1, "gained": 0}


def test_the_permutation_test_can_be_the_corrected_one():
    table = significance_table([BASE, BETTER, SAME], {**SETTINGS, "test": "permutation"}, "t")
    assert table["primary"] == "p_permutation"
    raw = [row["p_permutation"] for row in table["comparisons"]]
    adjusted = list(multipletests(raw, method="holm")[1])
    assert [row["p_adjusted"] for row in table["comparisons"]] == pytest.approx(adjusted)
