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
            "row_kind": kind, "printed_parameters": parameters}


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
    twin = rows["twinbert:prefix"]
    orig = ((0.3117 - 0.3059) + (0.3647 - 0.3711)) / 2
    rep = ((0.27 - 0.25) + (0.33 - 0.30)) / 2
    assert twin["ER"] == pytest.approx(rep / orig)
    assert twin["DRI"] == pytest.approx(orig / ((0.3059 + 0.3711) / 2) - rep / ((0.25 + 0.30) / 2))
    assert rows["colbert:prefix"]["baseline"] == "colbert:full"
    assert rows["colbert:prefix"]["ER"] == pytest.approx((0.19 - 0.20) / (0.3312 - 0.3215))


def test_effects_are_undefined_without_an_original_effect_or_with_a_zero_baseline():
    assert effects({"c": 0.3}, {"c": 0.3}, {"c": 0.4}, {"c": 0.2})[0] is None
    assert effects({"c": 0.3}, {"c": 0.0}, {"c": 0.4}, {"c": 0.2})[1] is None
    er, dri = effects({"c": 0.4}, {"c": 0.2}, {"c": 0.4}, {"c": 0.2})
    assert er == pytest.approx(1.0) and dri == pytest.approx(0.0)                  # a perfect reproduction


def test_parameters_and_summary(card):
    assert {p["row"]: p["equal"] for p in card["parameters"]} == {"twinbert:prefix": True, "twinbert:full": False}
    s = card["summary"]
    assert s["compared"] == 7 and s["within_tolerance"] == 1 and s["reported_only"] == 1
    assert s["without_counterpart"] == 1 and s["rows"] == 2 and s["rows_er_in_range"] == 0
    assert s["built_not_reported"] == 1                                             # BM25's row


def test_the_caption_says_what_an_embedded_scorecard_measures(card):
    text = caption(card)
    assert "1 of 7 cells within 5% of the printed value" in text and EMBEDDED in text
    assert EMBEDDED not in caption({**card, "budget": "paper"})
    latex = render_scorecard_latex(card)
    assert "twinbert:prefix vs twinbert:full" in latex and latex.count("\\\\") == 1 + 7 + 1 + 2


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
