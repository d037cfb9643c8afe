"""A table's scorecard against its paper's numbers: matching (ids, stand-in datasets, dashes), differences and the
tolerance, Breuer et al.'s ER and ΔRI per cell and per row against hand computations, the parameter counts, the
summary and the caption, and byte-stable outputs."""
from __future__ import annotations

import json

import pytest

from peftir.reports.reported import ReportedCell, ReportedTable
from peftir.reports.scorecard import (EMBEDDED, baseline_row, build_scorecard, caption, effects, matched,
                                      render_scorecard_latex, write_scorecard)

SETTINGS = {"tolerance": 0.05, "stand_ins": {"robust04": "vaswani"}, "budget": "embedded"}


def built(cell: str, value: float | None, kind: str = "method", parameters: str = "0.1M") -> dict:
    return {"cell": cell, "value": value, "printed": "-" if value is None else f"{value:.4f}", "stars": "",
            "row_kind": kind, "printed_parameters": parameters, "metric": cell.rpartition(":")[2]}


def reported(cell: str, value: float | None, printed: str | None = None) -> ReportedCell:
    return ReportedCell(cell, printed or ("-" if value is None else f"{value:.4f}"), value, "", cell, cell)


CELLS = [built("twinbert:full:vaswani:P@20", 0.25, parameters="23M"), built("twinbert:full:vaswani:nDCG@5", 0.30),
         built("twinbert:prefix:vaswani:P@20", 0.27), built("twinbert:prefix:vaswani:nDCG@5", 0.33),
         built("colbert:full:vaswani:P@20", 0.20), built("colbert:prefix:vaswani:P@20", 0.19),
         built("twinbert:improvement:vaswani:P@20", None, "improvement"), built("bm25:vaswani:P@20", 0.28, "reference")]
TABLE = ReportedTable("table4", "Table 4", "", "twinbert:full", (
    reported("twinbert:full:robust04:P@20", 0.3059), reported("twinbert:full:robust04:nDCG@5", 0.3711),
    reported("twinbert:prefix:robust04:P@20", 0.3117), reported("twinbert:prefix:robust04:nDCG@5", 0.3647),
    reported("colbert:full:robust04:P@20", 0.3215), reported("colbert:prefix:robust04:P@20", 0.3312),
    reported("twinbert:improvement:robust04:P@20", None), reported("twinbert:prefix:msmarco:P@20", 0.5132)),
    {"twinbert:prefix": "0.1M", "twinbert:full": "110M"}, ({"row": "r", "column": "c", "why": "not built"},))


@pytest.fixture
def card():
    return build_scorecard(CELLS, TABLE, SETTINGS, "table4", "the paper")


def test_a_reported_cell_matches_its_own_id_else_its_stand_ins():
    cells = {"twinbert:full:robust04:P@20": {}, "twinbert:full:vaswani:P@20": {}}
    assert matched("twinbert:full:robust04:P@20", cells, SETTINGS["stand_ins"]) == "twinbert:full:robust04:P@20"
    assert matched("twinbert:full:robust04:nDCG@5", {"twinbert:full:vaswani:nDCG@5": {}},
                   SETTINGS["stand_ins"]) == "twinbert:full:vaswani:nDCG@5"
    assert matched("FT | MRR@10", {"FT | MRR@10": {}}, SETTINGS["stand_ins"]) == "FT | MRR@10"
    assert matched("twinbert:full:msmarco:P@20", cells, SETTINGS["stand_ins"]) is None


def test_a_grouped_tables_rows_compare_with_their_own_groups_baseline():
    assert baseline_row("colbert:prefix", "twinbert:full") == "colbert:full"
    assert baseline_row("DPT", "FT") == "FT"


def test_each_compared_cell_has_its_difference_and_tolerance(card):
    by_cell = {c["cell"]: c for c in card["cells"]}
    prefix = by_cell["twinbert:prefix:vaswani:P@20"]
    assert prefix["reported"] == 0.3117 and prefix["reproduced"] == 0.27
    assert prefix["difference"] == pytest.approx(0.27 - 0.3117)
    assert prefix["relative_difference"] == pytest.approx((0.27 - 0.3117) / 0.3117)
    assert prefix["within_tolerance"] is False
    dash = by_cell["twinbert:improvement:vaswani:P@20"]            # both print "-": they agree
    assert dash["difference"] is None and dash["within_tolerance"] is True
    assert [c["cell"] for c in card["reported_only"]] == ["twinbert:prefix:msmarco:P@20"]


def test_er_and_delta_ri_per_cell_and_per_row_are_breuers_against_the_groups_baseline(card):
    by_cell = {c["cell"]: c for c in card["cells"]}
    cell = by_cell["twinbert:prefix:vaswani:nDCG@5"]
    assert cell["ER"] == pytest.approx((0.33 - 0.30) / (0.3647 - 0.3711))          # the effect turned
    assert cell["DRI"] == pytest.approx((0.3647 - 0.3711) / 0.3711 - (0.33 - 0.30) / 0.30)
    rows = {r["row"]: r for r in card["rows"]}
    assert set(rows) == {"twinbert:prefix", "colbert:prefix"}                       # method rows, not the baseline
    twin = rows["twinbert:prefix"]                  # per measure, side by side: never one ratio of pooled columns
    per_measure = {m["column"]: m["ER"] for m in twin["measures"]}
    assert per_measure == pytest.approx({"vaswani:P@20": (0.27 - 0.25) / (0.3117 - 0.3059),
                                         "vaswani:nDCG@5": (0.33 - 0.30) / (0.3647 - 0.3711)})
    assert twin["ER"] == pytest.approx(sum(per_measure.values()) / 2)              # the median of two
    assert twin["ER_range"] == pytest.approx(sorted(per_measure.values()))
    assert twin["DRI"] == pytest.approx(((0.3117 - 0.3059) / 0.3059 - 0.02 / 0.25
                                         + (0.3647 - 0.3711) / 0.3711 - 0.03 / 0.30) / 2)
    assert twin["verdict"] == "not reproduced"
    assert rows["colbert:prefix"]["baseline"] == "colbert:full"
    assert rows["colbert:prefix"]["ER"] == pytest.approx((0.19 - 0.20) / (0.3312 - 0.3215))


# SPLADE Table 2's columns and the measure each is (the paper configuration's layout)
SPLADE_METRICS = {"MS MARCO MRR@10": "RR@10", "MS MARCO R@1000": "R@1000", "TREC DL 2019 nDCG@10": "nDCG@10",
                  "TREC DL 2020 nDCG@10": "nDCG@10", "R-FLOPS": "R-FLOPS"}


def _splade_row(reversed_effects: bool) -> tuple[dict, list[dict], ReportedTable]:
    """SPLADE Table 2's "DistilBERT adapter" row against DistilBERT's full fine-tuning, as the paper prints them
    (config/reported), reproduced with every effectiveness effect reversed (or exactly) and R-FLOPS exactly."""
    from pathlib import Path
    from peftir.reports.reported import load_reported

    paper = load_reported(Path(__file__).parents[1] / "config" / "reported" / "splade-adapters.yaml")
    printed = {e.cell: e for e in paper.tables["table2"].cells if e.cell.split(" | ")[0] in ("DistilBERT FT",
                                                                                                "DistilBERT adapter")}
    cells = []
    for column, metric in SPLADE_METRICS.items():
        base, method = printed[f"DistilBERT FT | {column}"].value, printed[f"DistilBERT adapter | {column}"].value
        rebuilt = base - (method - base) if reversed_effects and metric != "R-FLOPS" else method
        cells += [{**built(f"DistilBERT FT | {column}", base), "metric": metric},
                  {**built(f"DistilBERT adapter | {column}", rebuilt), "metric": metric}]
    table = ReportedTable("table2", "Table 2", "", "DistilBERT FT", tuple(printed.values()), {}, ())
    (row,) = build_scorecard(cells, table, SETTINGS, "splade/table2", "the paper")["rows"]
    return row, cells, table


def test_reversed_effectiveness_is_a_failure_whatever_a_cost_column_does():
    """Pooled over the row's columns (the scorecard before), R-FLOPS' drop (3.93 → 1.86) outweighs the four reversed
    effectiveness effects: ER 1.00, ΔRI ≈ 0. Per measure, effectiveness only: every ER −1 (DL 2019's printed
    effect, 0.001, is within its precision: no ER) and the row is not reproduced."""
    row, cells, table = _splade_row(reversed_effects=True)
    value = {c["cell"]: c["value"] for c in cells}
    paper = {e.cell: e.value for e in table.cells}
    columns = list(SPLADE_METRICS)
    pooled = effects(*({c: source[f"{name} | {c}"] for c in columns} for name, source in (
        ("DistilBERT adapter", paper), ("DistilBERT FT", paper), ("DistilBERT adapter", value),
        ("DistilBERT FT", value))))
    assert pooled[0] == pytest.approx(1.0, abs=0.01) and abs(pooled[1]) < 0.01          # what the issue found
    per_measure = {m["column"]: (m["effect"], m["ER"]) for m in row["measures"]}
    assert per_measure.pop("TREC DL 2019 nDCG@10") == ("unstable", None)
    assert all(state == "stable" and er == pytest.approx(-1.0) for state, er in per_measure.values())
    assert row["ER"] == pytest.approx(-1.0) and row["verdict"] == "not reproduced"
    assert row["left_out"] == ["R-FLOPS"] and "R-FLOPS" not in row["columns"]
    exact, _, _ = _splade_row(reversed_effects=False)
    assert exact["ER"] == pytest.approx(1.0) and exact["DRI"] == pytest.approx(0.0, abs=1e-12)
    assert exact["verdict"] == "reproduced"


def test_opposite_effects_do_not_average_back_into_a_reproduction():
    """Two measures, one effect reproduced three times over and one reversed: the median ER is 1.0, but a turned
    effect means the row is not reproduced."""
    cells = [{**built(f"{row} | {col}", value), "metric": "RR@10"} for row, col, value in
             (("ft", "A", 0.30), ("m", "A", 0.36), ("ft", "B", 0.30), ("m", "B", 0.28))]
    entries = tuple(reported(f"{row} | {col}", value) for row, col, value in
                    (("ft", "A", 0.300), ("m", "A", 0.320), ("ft", "B", 0.300), ("m", "B", 0.320)))
    (row,) = build_scorecard(cells, ReportedTable("t", "T", "", "ft", entries, {}, ()), SETTINGS, "t", "p")["rows"]
    assert sorted(m["ER"] for m in row["measures"]) == pytest.approx([-1.0, 3.0])
    assert row["ER"] == pytest.approx(1.0) and row["reversed"] == 1 and row["verdict"] == "not reproduced"


def test_an_original_effect_within_the_printed_precision_gets_no_er():
    """0.341 against 0.340: a difference of one unit of the last printed digit, which rounding alone can make (or
    hide); ER would divide by noise, so it is flagged, not printed; a zero effect is "none"."""
    cells = [built("ft | A", 0.30), built("m | A", 0.36), built("ft | B", 0.50), built("m | B", 0.40),
             built("ft | C", 0.20), built("m | C", 0.25)]
    cells = [{**c, "metric": "RR@10"} for c in cells]
    entries = [ReportedCell("ft | A", "0.340", 0.340, "", "ft", "A"), ReportedCell("m | A", "0.341", 0.341, "", "m", "A"),
               ReportedCell("ft | B", "0.45", 0.45, "", "ft", "B"), ReportedCell("m | B", "0.45", 0.45, "", "m", "B"),
               ReportedCell("ft | C", "20.0", 0.200, "", "ft", "C"), ReportedCell("m | C", "25.0", 0.250, "", "m", "C")]
    card = build_scorecard(cells, ReportedTable("t", "T", "", "ft", tuple(entries), {}, ()), SETTINGS, "t", "p")
    (row,) = card["rows"]
    effects_of = {m["column"]: (m["effect"], m["ER"]) for m in row["measures"]}
    assert effects_of["A"] == ("unstable", None) and effects_of["B"] == ("none", None)
    assert effects_of["C"][0] == "stable" and effects_of["C"][1] == pytest.approx(1.0)   # a percentage's unit
    assert card["summary"]["measures_unstable"] == 1 and "unst." in render_scorecard_latex(card)


def test_effects_are_undefined_without_an_original_effect_or_with_a_zero_baseline():
    assert effects({"c": 0.3}, {"c": 0.3}, {"c": 0.4}, {"c": 0.2})[0] is None
    assert effects({"c": 0.3}, {"c": 0.0}, {"c": 0.4}, {"c": 0.2})[1] is None
    er, dri = effects({"c": 0.4}, {"c": 0.2}, {"c": 0.4}, {"c": 0.2})
    assert er == pytest.approx(1.0) and dri == pytest.approx(0.0)                  # a perfect reproduction


def test_a_printed_share_is_compared_as_a_share_at_its_printed_digits():
    """SPLADE's tables print "2.23%": the build's "1.5M (2.23%)" says the same; a count is compared as a count."""
    from peftir.reports.scorecard import parameters_equal

    assert parameters_equal("2.23%", "1.5M (2.23%)") and parameters_equal("100%", "67M (100.00%)")
    assert not parameters_equal("2.16%", "1.5M (2.23%)") and not parameters_equal("2.23%", "1.5M")
    assert parameters_equal("0.1M", "0.1M (0.09%)") and not parameters_equal("8K", "0.1M")
    assert parameters_equal("0.40%", "1.6M (0.40%); 26M trained") and parameters_equal("1.6M", "1.6M; 26M trained")


def test_parameters_and_summary(card):
    assert {p["row"]: p["equal"] for p in card["parameters"]} == {"twinbert:prefix": True, "twinbert:full": False}
    s = card["summary"]
    assert s["compared"] == 7 and s["within_tolerance"] == 1 and s["reported_only"] == 1
    assert s["without_counterpart"] == 1 and s["rows"] == 2 and s["rows_er_in_range"] == 0
    assert s["built_not_reported"] == 1                                             # BM25's row


def test_the_caption_says_what_an_embedded_scorecard_measures(card):
    text = caption(card)
    assert "1 of 7 cells within 5% of the printed value" in text and EMBEDDED in text
    assert "0 of 2 rows reproduced" in text and "effectiveness measures only" in text
    assert EMBEDDED not in caption({**card, "budget": "paper"})
    latex = render_scorecard_latex(card)
    assert "twinbert:prefix vs twinbert:full" in latex and latex.count("\\\\") == 1 + 7 + 1 + 2 + 1 + 2
    assert "twinbert:prefix: 0.1M vs 0.1M (equal)" in latex and "twinbert:full: 110M vs" in latex


def test_outputs_are_byte_stable(card, tmp_path):
    first = [tmp_path / f"a.{ext}" for ext in ("tex", "json", "csv", "pdf", "png")]
    second = [tmp_path / f"b.{ext}" for ext in ("tex", "json", "csv", "pdf", "png")]
    write_scorecard(card, *first)
    write_scorecard(json.loads(json.dumps(card)), *second)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    assert json.loads(first[1].read_text()) == json.loads(json.dumps(card))


def test_against_the_original_runs_repro_eval_sees_a_perfect_reproduction_when_the_runs_are_the_authors(tmp_path):
    """The authors' runs given as the very runs the table's cells were made from: KTU 1, nRMSE 0 on the table's
    metric; on another collection (budget embedded) only the unpaired t-tests are defined."""
    from peftir.data.trec import write_run
    from peftir.reports.original_runs import against_original

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{q} 1\nq{q} 0 d{q + 10} 1\n" for q in range(1, 7)))
    cells, joined = [], {}
    for row, shift in (("full", 0), ("lora", 3)):
        runs, whole = [], {}
        for fold, queries in (("1", (1, 2, 3)), ("2", (4, 5, 6))):
            run = {f"q{q}": {f"d{(q + d + shift) % 20}": 1.0 / (d + 1) for d in range(12)} for q in queries}
            whole.update(run)
            path = tmp_path / f"{row}-{fold}.run"
            write_run(path, run, tag="t")
            metrics = tmp_path / f"{row}-{fold}.json"
            metrics.write_text(json.dumps({"run": str(path), "qrels": str(qrels)}))
            runs.append({"fold": fold, "seed": 1, "metrics_file": str(metrics)})
        cells.append({"cell": f"r:{row}:d:P@10", "metric": "P@10", "runs": runs})
        joined[f"r:{row}"] = tmp_path / f"original-{row}.run"
        write_run(joined[f"r:{row}"], whole, tag="orig")
    original = {"qrels": str(qrels), "rows": {row: str(path) for row, path in joined.items()}}
    (found,) = against_original(cells, original, "r:full", "paper", tmp_path / "scratch_paper")
    assert (found["row"], found["baseline"], found["seed"]) == ("r:lora", "r:full", 1)
    assert found["KTU"]["advanced"] == pytest.approx(1.0) and found["KTU"]["baseline"] == pytest.approx(1.0)
    assert found["nRMSE"]["advanced"]["P@10"] == pytest.approx(0.0)
    assert set(found["p"]["advanced"]) == {"P@10"}                       # only the table's metrics are kept
    (other,) = against_original(cells, original, "r:full", "embedded", tmp_path / "scratch_embedded")
    assert not other["paired"] and "KTU" not in other and set(other["p"]["advanced"]) == {"P@10"}


def test_every_substitution_is_in_the_cells_label_and_counted_apart(card):
    """vaswani scored for the paper's Robust04 (a stand-in), and what the reported file names (a split, a model, a
    budget) for its rows, are each in the cell's own entry, the CSV and the caption; the summary counts them apart."""
    from peftir.reports.reported import Substitution

    by_cell = {c["cell"]: c for c in card["cells"]}
    assert by_cell["twinbert:prefix:vaswani:P@20"]["substitutions"] == ["collection: vaswani for the paper's robust04"]
    assert card["summary"]["substituted"] == 7 and card["summary"]["like_for_like"] == 0
    table = ReportedTable("t", "T", "", "ft", (reported("ft | A", 0.3), reported("m | A", 0.4)), {}, (), (
        Substitution("model", "a public checkpoint for the paper's", rows=("m",)),))
    cells = [{**built("ft | A", 0.3), "metric": "RR@10"}, {**built("m | A", 0.4), "metric": "RR@10"}]
    other = build_scorecard(cells, table, SETTINGS, "t", "p")
    assert [c["substitutions"] for c in other["cells"]] == [[], ["model: a public checkpoint for the paper's"]]
    assert (other["summary"]["like_for_like"], other["summary"]["substituted"]) == (1, 1)
    assert "1 (§) score something else in place of the paper's: model: a public checkpoint" in caption(other)
    assert "A$^\\S$" in render_scorecard_latex(other)


def test_a_substitution_of_an_unknown_kind_is_refused_naming_the_key(tmp_path):
    from peftir.reports.reported import ReportedError, load_reported

    path = tmp_path / "r.yaml"
    path.write_text("paper: p\nsource: s\nconfiguration: c\ntables:\n  t:\n    place: T\n    cells: []\n"
                    "    substitutions: [{kind: weather, what: rain}]\n")
    with pytest.raises(ReportedError, match=r"tables.t.substitutions\[0\].kind = 'weather': allowed: collection, "
                                            r"split, model, budget"):
        load_reported(path)
    path.write_text("paper: p\nsource: s\nconfiguration: c\ntables:\n  t:\n    place: T\n    cells: []\n"
                    "    row_baselines: {a: b}\n")
    with pytest.raises(ReportedError, match=r"tables.t.row_baselines: 'a' -> 'b': both must be rows"):
        load_reported(path)


def test_a_row_is_compared_with_the_papers_own_baseline_for_it():
    """SPLADE compares each backbone's adapter with that backbone's full fine-tuning, not DistilBERT's."""
    cells = [{**built(f"{row} | A", value), "metric": "RR@10"} for row, value in
             (("DistilBERT FT", 0.30), ("coCondenser FT", 0.36), ("coCondenser adapter", 0.35))]
    entries = tuple(reported(f"{row} | A", value) for row, value in
                    (("DistilBERT FT", 0.320), ("coCondenser FT", 0.366), ("coCondenser adapter", 0.356)))
    table = ReportedTable("t", "T", "", "DistilBERT FT", entries, {}, (),
                          row_baselines={"coCondenser adapter": "coCondenser FT"})
    rows = {r["row"]: r for r in build_scorecard(cells, table, SETTINGS, "t", "p")["rows"]}
    assert rows["coCondenser adapter"]["baseline"] == "coCondenser FT"
    assert rows["coCondenser adapter"]["ER"] == pytest.approx((0.35 - 0.36) / (0.356 - 0.366))
    assert rows["coCondenser FT"]["baseline"] == "DistilBERT FT"
