"""The modular CLIR tables and figure, from real metrics files (ir_measures on small TREC runs), and their audit.

Layouts and input lists come from ``peftir.clir.contract.clir_report_layout`` and ``peftir.clir.plan.clir_report_runs``
on a small config, so the files are those the rules would pass; expectations are recomputed here from the ranks
the runs were written with (one relevant document per query: AP = 1 / its rank).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from statistics import fmean

import pytest
from scipy.stats import ttest_ind

from peftir.data.trec import write_qrels, write_run
from peftir.evaluation.metrics import measure_run
from peftir.clir.contract import clir_report_layout
from peftir.pipeline.contract import PATHS, artefact
from peftir.provenance import records
from peftir.app.audit import audit, check_planned
from peftir.reports.auditor import AuditFailure, Auditor
from peftir.clir.reports import AVG, build_clir_figure, drawn, make_clir_figure, make_clir_table
from peftir.reports.tables import read_table
from peftir.clir.plan import clir_report_runs

QUERIES = [f"q{i:02d}" for i in range(12)]
QRELS = "results/modular-clir/collection/de/qrels.txt"    # every pair is judged on these here
FOLDS = "results/modular-clir/collection/folds.json"
PARAMETERS = {"adapter": 7_000, "sftm": 1_300_000, "full": 109_000_000}
CONFIG = {"modular_clir": {
    "metric": "AP",
    "languages": {"en": {"label": "EN"}, "de": {"label": "DE"}, "es": {"label": "ES"}},
    "ranking": {"seeds": [1, 2], "reduction_factors": {"adapter": 16, "sftm": 2}},
    "labels": {"prerank": {"dense": "Pre-ranker"}, "systems": {"ra_doc": "RA + LA_Doc", "rm_doc": "RM + LM_Doc",
                                                             "monobert": "monoBERT"}},
    "tables": {"t1": {"prerank": "dense", "pairs": ["en-de", "en-es"], "systems": ["ra_doc", "rm_doc"],
                      "caption": "CLIR: MAP (synthetic)."}},
    "figures": {"f2": {"prerank": "dense", "pairs": ["en-de", "en-es"], "systems": ["ra_doc", "rm_doc", "monobert"],
                       "reduction_factors": [2, 8], "caption": "MAP against the reduction factor."}},
}}


def prerank_rank(pair: str, index: int) -> int:
    """The pre-ranker puts each query's relevant document at rank 1 to 5."""
    return 1 + (index + (pair == "en-es")) % 5


def rank(pair: str, system: str, ranking: str, seed: int, index: int) -> int:
    """RA + LA_Doc lifts nearly every relevant document to the top (more so with a small reduction factor);
    RM + LM_Doc keeps the pre-ranker's order: clearly better, and equal."""
    if system == "rm_doc":
        return prerank_rank(pair, index)
    return 2 if (index + seed) % (3 if ranking == "adapter-rf8" else 4) == 0 else 1


def write_ranked(path: str, ranks: dict[str, int]) -> None:
    """Five documents per query, the relevant one (``d-<qid>``) at its rank."""
    run = {}
    for qid, position in ranks.items():
        others = iter(f"n{k}-{qid}" for k in range(5))
        docs = [f"d-{qid}" if r == position else next(others) for r in range(1, 6)]
        run[qid] = {doc: float(10 - r) for r, doc in enumerate(docs)}
    write_run(path, run, "test")


def record(rule: str, inputs: dict, outputs: dict, params: dict | None = None, wildcards: dict | None = None) -> None:
    """A job's provenance records, as ``workflow.job`` writes them."""
    records.write_records(records.job_record(rule, wildcards or {}, params or {}, inputs, outputs, records.now(),
                                             records.now()))


def evaluate(run: str, metrics: str) -> None:
    wildcards = artefact(metrics)[1]
    measure_run(run, QRELS, FOLDS, wildcards["fold"], {"metrics": ["AP"]}, metrics, about=wildcards)
    record("evaluate_clir", {"run": run, "qrels": QRELS, "folds": FOLDS}, {"metrics": metrics},
           {"clir_metric": ["AP"]}, wildcards)


@pytest.fixture
def made(tmp_path, monkeypatch):
    """Every file the two reports read, with their provenance records, under a fresh ``results/``."""
    monkeypatch.chdir(tmp_path)
    write_qrels(QRELS, {qid: {f"d-{qid}": 1} for qid in QUERIES})
    Path(FOLDS).write_text(json.dumps({"dataset": "t", "scheme": "presplit",
                                       "splits": {"train": [], "valid": [], "test": QUERIES}}))
    record("clir_collection", {}, {"qrels": QRELS, "folds": FOLDS})
    inputs = {kind: clir_report_runs(CONFIG, kind, name) for kind, name in (("tables", "t1"), ("figures", "f2"))}
    for summary in {s for files in inputs.values() for s in files["summaries"]}:
        wildcards = artefact(summary)[1]
        module = PATHS.ranking_module.format(**wildcards)
        Path(module).mkdir(parents=True)
        Path(module, "weights.bin").write_bytes(wildcards["ranking"].encode())
        kind = wildcards["ranking"].split("-")[0]
        Path(summary).write_text(json.dumps({"module_parameters": PARAMETERS[kind], "trainable_parameters": 1,
                                             "kind": kind, "seed": int(wildcards["seed"])}))
        record("ranking_adapter", {}, {"module": module, "summary": summary})
    for prerank in inputs["tables"]["prerank"]:
        pair = artefact(prerank)[1]["pair"]
        run = PATHS.clir_prerank.format(pair=pair, prerank="dense")
        write_ranked(run, {qid: prerank_rank(pair, i) for i, qid in enumerate(QUERIES)})
        record("prerank_clir", {}, {"run": run})
        evaluate(run, prerank)
    for metrics in {m for files in inputs.values() for m in files["metrics"]}:
        wc = artefact(metrics)[1]
        run = PATHS.clir_run.format(**wc)
        write_ranked(run, {qid: rank(wc["pair"], wc["system"], wc["ranking"], int(wc["seed"]), i)
                           for i, qid in enumerate(QUERIES)})
        record("rerank_clir", {"ranking_module": PATHS.ranking_module.format(**wc)}, {"run": run})
        evaluate(run, metrics)
    return inputs


def expected_ap(pair: str, system: str, ranking: str, seed: int) -> list[float]:
    return [1 / rank(pair, system, ranking, seed, i) for i in range(len(QUERIES))]


def prerank_ap(pair: str) -> list[float]:
    return [1 / prerank_rank(pair, i) for i in range(len(QUERIES))]


def build_table(made, table: str = "t1", config: dict = CONFIG) -> dict[str, Path]:
    layout = clir_report_layout(config, "tables", table)
    inputs = clir_report_runs(config, "tables", table)
    out = {suffix: Path(getattr(PATHS, f"clir_table_{suffix}").format(table=table)) for suffix in ("tex", "json", "csv")}
    make_clir_table(layout, inputs["metrics"], inputs["prerank"], inputs["summaries"], str(out["tex"]),
                    str(out["json"]), str(out["csv"]), translated=inputs.get("translated", []))
    record("clir_table", inputs, {name: str(path) for name, path in out.items()}, {"clir_table": layout},
           {"table": table})
    return out


def cells_by_id(json_path: Path) -> dict[str, dict]:
    return {cell["cell"]: cell for cell in json.loads(json_path.read_text())}


def test_cells_are_means_of_their_runs_and_avg_the_mean_over_pairs(made) -> None:
    cells = cells_by_id(build_table(made)["json"])
    for pair in ("en-de", "en-es"):
        assert cells[f"dense:{pair}:AP"]["value"] == pytest.approx(fmean(prerank_ap(pair)), abs=1e-12)
        values = [fmean(expected_ap(pair, "ra_doc", "adapter-rf16", seed)) for seed in (1, 2)]
        cell = cells[f"ra_doc:{pair}:AP"]
        assert cell["value"] == pytest.approx(fmean(values), abs=1e-12)
        assert cell["per_seed"] == pytest.approx({"1": values[0], "2": values[1]}, abs=1e-12)
        assert cell["printed"] == f"{cell['value']:.4f}" and len(cell["runs"]) == 2
    for row in ("dense", "ra_doc", "rm_doc"):
        avg = cells[f"{row}:{AVG}:AP"]
        assert avg["value"] == pytest.approx(fmean(cells[f"{row}:{p}:AP"]["value"] for p in ("en-de", "en-es")),
                                             abs=1e-12)
        assert avg["dataset_label"] == "Avg"
    assert len(cells[f"ra_doc:{AVG}:AP"]["runs"]) == 4 and len(cells[f"dense:{AVG}:AP"]["runs"]) == 2


def test_stars_are_the_two_sided_unpaired_test_against_the_pre_ranker(made) -> None:
    cells = cells_by_id(build_table(made)["json"])
    for pair in ("en-de", "en-es", AVG):
        pairs = ["en-de", "en-es"] if pair == AVG else [pair]
        base = [v for p in pairs for v in prerank_ap(p)]
        for system, ranking in (("ra_doc", "adapter-rf16"), ("rm_doc", "sftm-rf2")):
            values = [v for p in pairs for seed in (1, 2) for v in expected_ap(p, system, ranking, seed)]
            p_value = ttest_ind(values, base, equal_var=True).pvalue
            cell = cells[f"{system}:{pair}:AP"]
            assert cell["p_value"] == pytest.approx(p_value, rel=1e-9)
            assert cell["stars"] == ("*" if p_value <= 0.05 else "")
            assert cell["ttest"]["against"] == f"dense:{pair}:AP"
        assert cells[f"ra_doc:{pair}:AP"]["stars"] == "*"         # clearly better
        assert cells[f"rm_doc:{pair}:AP"]["stars"] == ""          # the pre-ranker's own order: p = 1
        assert cells[f"dense:{pair}:AP"]["stars"] == "" and cells[f"dense:{pair}:AP"]["p_value"] is None


def test_parameters_latex_and_twins(made) -> None:
    out = build_table(made)
    cells = cells_by_id(out["json"])
    assert cells["ra_doc:en-de:AP"]["printed_parameters"] == "7K"
    assert cells["rm_doc:avg:AP"]["trainable_parameters"] == 1_300_000
    assert cells["rm_doc:avg:AP"]["printed_parameters"] == "1.3M"
    assert cells["dense:en-de:AP"]["printed_parameters"] == "-"
    tex = out["tex"].read_text()
    assert "EN-DE" in tex and "EN-ES" in tex and "Avg" in tex and "RA + LA\\_Doc" in tex
    assert f"{cells['ra_doc:avg:AP']['printed']}$^{{*}}$" in tex
    assert "unpaired two-sided t-test of per-query AP against the pre-ranker" in tex
    with open(out["csv"]) as handle:
        rows = list(csv.DictReader(handle))
    assert [row["cell"] for row in rows] == list(cells)
    for row in rows:
        assert row["printed"] == cells[row["cell"]]["printed"] and row["stars"] == cells[row["cell"]]["stars"]
        assert int(row["n_runs"]) == len(cells[row["cell"]]["runs"])
    assert read_table(out["json"]).to_dict(orient="records") == list(cells.values())


def test_a_missing_or_unexpected_file_is_named(made) -> None:
    layout = clir_report_layout(CONFIG, "tables", "t1")
    files = made["tables"]
    gone = files["metrics"][3]
    with pytest.raises(ValueError, match=r"no metrics file for \(pair, system, ranking, seed\)"):
        make_clir_table(layout, [m for m in files["metrics"] if m != gone], files["prerank"], files["summaries"],
                        "t.tex", "t.json", "t.csv")
    extra = made["figures"]["metrics"][0]       # adapter-rf2: not this table's
    with pytest.raises(ValueError, match=extra):
        make_clir_table(layout, files["metrics"] + [extra], files["prerank"], files["summaries"], "t.tex", "t.json",
                        "t.csv")
    with pytest.raises(ValueError, match="pre-ranker 'dense' for pair 'en-es'"):
        make_clir_table(layout, files["metrics"], files["prerank"][:1], files["summaries"], "t.tex", "t.json", "t.csv")
    assert not Path("t.tex").exists()


def test_the_figure_has_one_point_per_system_and_factor_and_redraws_identically(made, tmp_path) -> None:
    layout = clir_report_layout(CONFIG, "figures", "f2")
    files = made["figures"]
    paths = [str(tmp_path / name) for name in ("f.pdf", "f.png", "f.json")]
    make_clir_figure(layout, files["metrics"], files["prerank"], files["summaries"], *paths)
    figure = json.loads(Path(paths[2]).read_text())
    assert [line["label"] for line in figure["lines"]] == ["RA + LA_Doc", "RM + LM_Doc", "monoBERT"]
    for line, module in zip(figure["lines"], ("adapter", "sftm", "full")):
        assert [p["reduction_factor"] for p in line["points"]] == [2, 8]
        for point in line["points"]:     # monoBERT: its one module at every factor
            ranking = "full" if module == "full" else f"{module}-rf{point['reduction_factor']}"
            assert point["ranking"] == ranking and len(point["runs"]) == 4
            means = [fmean(expected_ap(p, line["system"], ranking, s)) for p in ("en-de", "en-es") for s in (1, 2)]
            assert point["value"] == pytest.approx(fmean(means), abs=1e-12)
            assert point["trainable_parameters"] == PARAMETERS[module]
    assert figure["prerank"]["value"] == pytest.approx(fmean(prerank_ap("en-de") + prerank_ap("en-es")), abs=1e-12)
    pdf = Path(paths[0]).read_bytes()
    assert drawn(figure)[0] == pdf == drawn(build_clir_figure(layout, files["metrics"], files["prerank"],
                                                              files["summaries"]))[0]


def audit_lines(report: Path, **options) -> tuple[int, list[str]]:
    said: list[str] = []
    return audit(str(report), Path.cwd(), check_config=False, say=said.append, **options), said


def test_a_clean_table_audits_and_its_chain_reaches_the_ranking_module(made) -> None:
    tex = build_table(made)["tex"]
    done, said = audit_lines(tex)
    assert done == 0, said
    assert said[-1].startswith("audit passed: 9 cell(s)") and "t-tests rerun" in said[-1]
    assert any("ranking_module results/modular-clir/models/ranking/adapter-rf16/seed1" in line
               and "clir_run" in line and "clir_metrics" in line for line in said)
    assert any("per-query values vs 24 of dense:avg:AP (unpaired, two-sided)" in line for line in said)


def forge(out: dict[str, Path], made, edit) -> None:
    """Edit the JSON twin, render the LaTeX from it and re-record the table: every hash agrees again."""
    from peftir.clir.reports import render_clir_latex

    cells = json.loads(out["json"].read_text())
    edit({cell["cell"]: cell for cell in cells})
    out["json"].write_text(json.dumps(cells, indent=1))
    layout = clir_report_layout(CONFIG, "tables", "t1")
    out["tex"].write_text(render_clir_latex(read_table(out["json"]), layout))
    record("clir_table", made["tables"], {name: str(path) for name, path in out.items()},
           {"clir_table": layout}, {"table": "t1"})


def test_an_edited_value_fails_the_audit(made) -> None:
    out = build_table(made)
    text = out["json"].read_text()
    cells = cells_by_id(out["json"])
    printed = cells["rm_doc:en-es:AP"]["printed"]
    out["json"].write_text(text.replace(f'"printed": "{printed}"', '"printed": "0.9999"', 1))
    done, said = audit_lines(out["tex"])
    assert done == 1 and "sha256 differs" in said[-1] and str(out["json"]) in said[-1]
    out["json"].write_text(text)

    def higher(cells: dict) -> None:
        cells["rm_doc:en-es:AP"]["value"] += 0.01
        cells["rm_doc:en-es:AP"]["printed"] = f"{cells['rm_doc:en-es:AP']['value']:.4f}"

    forge(out, made, higher)
    done, said = audit_lines(out["tex"])
    assert done == 1 and "cell rm_doc:en-es:AP" in said[-1] and "is not the mean" in said[-1]


def test_a_forged_star_or_a_moved_run_fails_the_audit(made) -> None:
    out = build_table(made)
    clean = out["json"].read_text()

    def starred(cells: dict) -> None:
        cells["rm_doc:en-de:AP"]["stars"] = "*"

    forge(out, made, starred)
    done, said = audit_lines(out["tex"], cells=["rm_doc:en-de:AP"])
    assert done == 1 and "two-sided t-test against dense:en-de:AP" in said[-1]
    out["json"].write_text(clean)

    def swapped(cells: dict) -> None:    # both pairs' RA cells trade their runs, values recomputed to match
        de, es = cells["ra_doc:en-de:AP"], cells["ra_doc:en-es:AP"]
        for key in ("runs", "value", "printed", "per_seed"):
            de[key], es[key] = es[key], de[key]

    forge(out, made, swapped)
    done, said = audit_lines(out["tex"])
    assert done == 1 and "differ from what its recorded inputs and layout give" in said[-1]


def test_a_clean_figure_audits_and_an_edited_point_fails(made) -> None:
    layout = clir_report_layout(CONFIG, "figures", "f2")
    out = {suffix: Path(getattr(PATHS, f"clir_figure_{suffix}").format(figure="f2")) for suffix in ("pdf", "png", "json")}
    make_clir_figure(layout, *made["figures"].values(), *map(str, out.values()))

    def recorded() -> None:
        record("clir_figure", made["figures"], {name: str(path) for name, path in out.items()},
               {"clir_figure": layout}, {"figure": "f2"})

    recorded()
    done, said = audit_lines(out["pdf"])
    assert done == 0, said
    assert said[-1].startswith("audit passed: 7 point(s)")
    figure = json.loads(out["json"].read_text())
    figure["lines"][0]["points"][1]["value"] += 0.01
    out["json"].write_text(json.dumps(figure))
    done, said = audit_lines(out["pdf"])
    assert done == 1 and "sha256 differs" in said[-1] and str(out["json"]) in said[-1]
    recorded()                               # hashes forged: the PDF still shows the old value
    done, said = audit_lines(out["pdf"])
    assert done == 1 and "is not the drawing" in said[-1]
    out["pdf"].write_bytes(drawn(figure)[0])   # ... and redrawn: the value is not its runs' mean
    recorded()
    done, said = audit_lines(out["pdf"])
    assert done == 1 and "cell ra_doc:rf8:avg:AP" in said[-1] and "is not the mean" in said[-1]


def test_the_planned_inputs_are_the_current_configs(made) -> None:
    build_table(made)
    tex = PATHS.clir_table_tex.format(table="t1")
    made_with = records.read_record(tex)
    check_planned(Auditor(), made_with, CONFIG, tex)
    fewer_seeds = json.loads(json.dumps(CONFIG))
    fewer_seeds["modular_clir"]["ranking"]["seeds"] = [1]
    with pytest.raises(AuditFailure, match="its metrics are not those the current config asks for"):
        check_planned(Auditor(), made_with, fewer_seeds, tex)


def nmt_config(translations: dict[str, str]) -> dict:
    """CONFIG with an NMT + BM25 row in t1 and the user's ``translations``."""
    config = json.loads(json.dumps(CONFIG))
    config["modular_clir"]["tables"]["t1"]["nmt_bm25"] = "NMT + BM25"
    config["modular_clir"]["translations"] = translations
    return config


def test_without_translations_the_nmt_bm25_row_is_dashes_naming_the_config_key(made) -> None:
    out = build_table(made, config=nmt_config({}))
    cells = cells_by_id(out["json"])
    row = [f"nmt_bm25:{column}:AP" for column in ("en-de", "en-es", AVG)]
    assert list(cells)[3:6] == row                     # after the pre-ranker, before the rerankers (the paper's order)
    for cell in map(cells.get, row):
        assert (cell["printed"], cell["value"], cell["runs"], cell["stars"]) == ("-", None, [], "")
    assert cells[row[0]]["note"].endswith("(modular_clir.translations.en-de not given)")
    assert "modular_clir.translations.en-de, modular_clir.translations.en-es" in cells[row[2]]["note"]
    assert cells["dense:en-de:AP"]["note"] is None
    tex = out["tex"].read_text()
    assert "NMT + BM25 (-): no translation model installs here and no translated queries were given for EN-DE, " \
           r"EN-ES; set modular\_clir.translations.PAIR" in tex
    done, said = audit_lines(out["tex"])
    assert done == 0, said
    assert any(line.startswith("cell nmt_bm25:avg:AP (NMT + BM25): -, not run") for line in said)


def test_with_translations_the_nmt_bm25_row_is_bm25s_metric_traced_to_the_file(made, tmp_path) -> None:
    translations = tmp_path / "en-de.tsv"
    translations.write_text("".join(f"{qid}\tübersetzt {qid}\n" for qid in QUERIES))
    run = PATHS.clir_translated_run.format(pair="en-de")
    write_ranked(run, {qid: 1 + i % 3 for i, qid in enumerate(QUERIES)})
    record("nmt_bm25_clir", {"translations": str(translations)}, {"run": run})
    evaluate(run, PATHS.clir_translated_metrics.format(pair="en-de", fold="1"))
    out = build_table(made, config=nmt_config({"en-de": str(translations)}))
    cells = cells_by_id(out["json"])
    cell = cells["nmt_bm25:en-de:AP"]
    assert cell["value"] == pytest.approx(fmean(1 / (1 + i % 3) for i in range(len(QUERIES))), abs=1e-12)
    assert cell["runs"][0]["translations"] == {"file": str(translations), "sha256": records.sha256(translations)}
    assert (cell["stars"], cell["p_value"]) == ("", None)           # a baseline, as the pre-ranker: untested
    assert cells["nmt_bm25:en-es:AP"]["printed"] == cells["nmt_bm25:avg:AP"]["printed"] == "-"
    assert "were given for EN-ES;" in out["tex"].read_text()
    done, said = audit_lines(out["tex"])
    assert done == 0, said
    assert any("clir_translated_run" in line and "clir_translated_metrics" in line for line in said)
    assert any(f"read the translations {translations} [{records.sha256(translations)[:12]}]" in line for line in said)
    translations.write_text(f"{QUERIES[0]}\tanders\n")
    done, said = audit_lines(out["tex"])
    assert done == 1 and f"{translations}: changed since" in said[-1]


def test_an_undefined_test_is_never_starred() -> None:
    from peftir.evaluation.stats import star, ttest_two_sided

    assert math.isnan(ttest_two_sided([0.5], [0.1, 0.2]))
    assert math.isnan(ttest_two_sided([1.0, 1.0], [0.5, 0.5]))
    assert star(math.nan) == star(None) == star(0.051) == "" and star(0.05) == "*"
    assert ttest_two_sided([0.9, 1.0, 0.95], [0.1, 0.2, 0.15]) == pytest.approx(
        ttest_ind([0.9, 1.0, 0.95], [0.1, 0.2, 0.15]).pvalue, rel=1e-12)


def test_every_clir_cells_runs_name_their_language_pair_so_averages_pair_by_pair_and_query():
    """The pair comes from each run's metrics file, as the workflow names it: a reranker's and the pre-ranker's."""
    from peftir.clir.contract import PATHS as CLIR_PATHS
    from peftir.clir.reports import with_pairs
    from peftir.evaluation.significance import query_scores

    paths = [CLIR_PATHS.clir_metrics.format(pair=pair, prerank="dense", system="ra_doc", ranking="adapter-rf16", seed=1,
                                            fold="1") for pair in ("en-de", "en-fi")]
    paths.append(CLIR_PATHS.clir_prerank_metrics.format(pair="de-fi", prerank="dense", fold="1"))
    cell = with_pairs({"runs": [{"seed": 1, "fold": "1", "metrics_file": path, "per_query": {"q1": 0.5}}
                                for path in paths]})
    assert [run["pair"] for run in cell["runs"]] == ["en-de", "en-fi", "de-fi"]
    assert sorted(query_scores(cell)) == ["de-fi/q1", "en-de/q1", "en-fi/q1"]      # one query id, three queries
