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


def test_a_clir_average_pairs_by_language_pair_and_query_with_seeds_averaged():
    """An average over language pairs holds each query id once per pair: named by its pair, it pairs query by query
    (before, the recurring ids made it unpaired: seeds × pairs × queries pooled by Welch's test)."""
    def average(offset: float, rng: int) -> dict:
        made = []
        for pair in ("en-de", "en-fi"):
            for one in runs(offset, rng + len(pair), folds=("1",)):
                made.append({**one, "pair": pair})
        return {"cell": f"ra:{offset}", "runs": made, "stars": "", "ttest": {"against": "ra:0.0"}}

    base, better = average(0.0, 1), average(0.1, 2)
    scores = query_scores(base)
    assert len(scores) == 2 * 12 and "en-de/1-0" in scores
    assert scores["en-fi/1-3"] == pytest.approx(np.mean([r["per_query"]["1-3"] for r in base["runs"]
                                                         if r["pair"] == "en-fi"]))       # over the 3 seeds
    result = compare(better, base, SETTINGS)
    assert result["paired"] and result["unpaired_reason"] is None and result["n"] == 24
    unnamed = {**base, "runs": [{k: v for k, v in r.items() if k != "pair"} for r in base["runs"]]}
    assert compare(better, unnamed, SETTINGS)["unpaired_reason"] == \
        "a run pools collections whose query ids recur, without naming them"


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
    assert result["unpaired_reason"] == "the cells score different queries (0 only in the cell, 8 only in the baseline)"
    from peftir.reports.significance_tables import caption, companion
    table = companion([BASE, other], SETTINGS, "t", _paper({}), {})
    assert "Unpaired, the cells score different queries (0 only in the cell, 8 only in the baseline): r:x:d:P@20." \
        in caption(table) and "unadjusted" in caption(table)
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


def test_the_family_is_what_the_stars_compare():
    assert [(c["cell"], b["cell"]) for c, b in family([BASE, BETTER, SAME, WORSE])] == [
        (BETTER["cell"], BASE["cell"]), (SAME["cell"], BASE["cell"]), (WORSE["cell"], BASE["cell"])]
    summary = significance_table([BASE, BETTER, SAME, WORSE], SETTINGS, "t")["summary"]
    assert summary == {"family": 3, "paired": 3, "significant_after_correction": 1}


def _paper(marks: dict[str, str], rows: dict[str, str] | None = None):
    from peftir.reports.reported import ReportedCell, ReportedTable

    cells = tuple(ReportedCell(name.replace(":d:", ":paper:"), "0.3", 0.3, mark, (rows or {}).get(name, name), "c")
                  for name, mark in marks.items())
    return ReportedTable("t", "Table 9", "", "r:full", cells, {}, ())


def test_the_papers_own_marks_stand_beside_the_reproductions_verdicts():
    """The paper's stars (transcribed in config/reported, matched through the stand-in dataset) against the
    reproduction's uncorrected and corrected verdicts: kept, lost, gained; not the rebuilt table's own stars."""
    from peftir.reports.significance_tables import caption, companion

    paper = _paper({BASE["cell"]: "", BETTER["cell"]: "*", SAME["cell"]: "**", WORSE["cell"]: ""})
    table = companion([BASE, BETTER, SAME, WORSE], SETTINGS, "t", paper, {"paper": "d"})
    verdicts = {row["cell"]: (row["paper_significant"], row["significant"], row["against_paper"])
                for row in table["comparisons"]}
    assert verdicts == {BETTER["cell"]: (True, True, "kept"), SAME["cell"]: (True, False, "lost"),
                        WORSE["cell"]: (False, False, "neither")}
    s = table["summary"]
    assert (s["paper_significant"], s["kept"], s["lost"], s["gained"], s["table_starred"]) == (2, 1, 1, 0, 2)
    assert s["significant_uncorrected"] >= s["significant_after_correction"] == 1
    assert "Significant in Table 9 of the paper (its own tests, alpha and tails): 2 of the 3 comparisons" \
        in caption(table)
    assert all(row["substitutions"] == ["collection: d for the paper's paper"] for row in table["comparisons"])


def test_a_table_the_paper_prints_no_test_for_says_so_and_letters_read_both_ways():
    from peftir.reports.significance_tables import against_paper, caption, companion, paper_direction
    from peftir.reports.reported import ReportedCell

    silent = companion([BASE, BETTER, SAME, WORSE], SETTINGS, "t",
                       _paper({BASE["cell"]: "", BETTER["cell"]: ""}), {"paper": "d"})
    assert {row["against_paper"] for row in silent["comparisons"]} == {"no test printed"}
    assert "prints no significance test" in caption(silent) and silent["summary"]["kept"] == 0
    # SPLADE: "significantly better than the rows of these letters", on whichever side is better
    base = ReportedCell("x", "0.3", 0.3, "defg", "a None", "c")
    assert paper_direction(ReportedCell("y", "0.3", 0.3, "bc", "e 0-3", "c"), base, True) == -1   # a beats e
    assert paper_direction(ReportedCell("y", "0.3", 0.3, "a", "b 0", "c"), base, True) == 1        # b beats a
    assert paper_direction(ReportedCell("y", "0.3", 0.3, "", "h 0-5", "c"), base, True) == 0
    # direction counts: significant the other way is not "kept"
    assert (against_paper(1, True, 0.02), against_paper(1, True, -0.02), against_paper(-1, True, -0.02)) == \
        ("kept", "reversed", "kept")
    assert (against_paper(1, False, 0.02), against_paper(0, True, 0.1), against_paper(None, True, 0.1)) == \
        ("lost", "gained", "unread")


def test_a_comparison_is_made_against_the_papers_own_baseline_for_its_row():
    """SPLADE compares a coCondenser adapter with coCondenser's fine-tuning; the table's stars test it against the
    table's one baseline (DistilBERT's), the companion against the paper's."""
    from peftir.reports.reported import ReportedCell, ReportedTable
    from peftir.reports.significance_tables import companion

    def retrieval(name: str, offset: float, rng: int, against: str | None = None) -> dict:
        made = {"cell": f"{name} | MRR@10", "runs": runs(offset, rng), "stars": ""}
        return made | ({"ttest": {"against": f"{against} | MRR@10"}} if against else {})

    cells = [retrieval("DistilBERT FT", 0.0, 1), retrieval("coCondenser FT", 0.1, 2, "DistilBERT FT"),
             retrieval("coCondenser adapter", 0.1, 3, "DistilBERT FT")]
    paper = ReportedTable("t", "T", "", "DistilBERT FT", tuple(
        ReportedCell(c["cell"], "0.3", 0.3, "", c["cell"], "MRR@10") for c in cells), {}, (),
        row_baselines={"coCondenser adapter": "coCondenser FT"})
    against = {row["cell"]: row["against"] for row in companion(cells, SETTINGS, "t", paper, {})["comparisons"]}
    assert against == {"coCondenser FT | MRR@10": "DistilBERT FT | MRR@10",
                       "coCondenser adapter | MRR@10": "coCondenser FT | MRR@10"}
