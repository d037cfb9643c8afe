"""The layout contract and the planning module: paths, names, params and inputs from the config alone."""
import copy
from pathlib import Path

import pytest
import yaml

from peftir.pipeline.contract import PARAMS, PATHS, artefact, wildcard_constraints
from peftir.semi_siamese.contract import BASELINE, BEST_OF, report_layout
from peftir.pipeline import plan
from peftir.semi_siamese import plan as semi_siamese_plan

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
RUN = {"dataset": "vaswani", "ranker": "colbert", "method": "lora", "fold": "2", "seed": "3"}    # one run's job
WILDCARDS = {**RUN, "epochs": "4", "table": "table5", "figure": "figure4", "reference": "backbone",
             "report": "table5", "package": "manpages-de", "language": "de", "kind": "sftm", "pair": "en-de",
             "prerank": "dense", "system": "ra_doc_noinv", "ranking": "adapter-rf16", "pretrained": "condenser",
             "backbone": "minilm", "retriever": "dpt", "negatives": "mined", "paper": "dptdr", "target": "dl19",
             "splade": "bi_adapter", "reranker": "tct_adapter"}                                   # every wildcard


@pytest.mark.parametrize("kind", PATHS.kinds())
def test_every_artefact_path_is_recognised_with_its_wildcards(kind):
    pattern = getattr(PATHS, kind)
    wildcards = {name: value for name, value in WILDCARDS.items() if "{" + name + "}" in pattern}
    assert artefact(pattern.format(**wildcards)) == (kind, wildcards)


@pytest.mark.parametrize("path", ["results/runs/../x/bm25.run", "results/runs/a/b/bm25.run",
                                  "results/models/vaswani/colbert/bitfit/fold1-seed1.pt",
                                  "results/tables/../../x.tex", "elsewhere/tables/table5.tex"])
def test_paths_outside_the_contract_are_not_artefacts(path):
    assert artefact(path) is None


def _config(**changes) -> dict:
    config = copy.deepcopy(CONFIG)
    for key, value in changes.items():
        section, name = key.split("__")
        config[section][name] = value
    return config


def test_a_sequential_hybrid_starts_from_the_standalone_run_when_m_equals_the_epochs():
    wildcards = {**RUN, "method": "prefix_then_ss_lora"}
    assert semi_siamese_plan.first_stage_input(CONFIG, wildcards) == {
        "first_stage": "results/models/vaswani/colbert/prefix/fold2-seed3.pt"}
    assert semi_siamese_plan.first_stage_input(CONFIG, {**RUN, "method": "prefix_lora"}) == {}    # concurrent


def test_hybrids_with_the_same_first_part_share_its_run_of_m_epochs():
    config = _config(training__sequential={"first_epochs": 7, "second_epochs": 1})
    inputs = [semi_siamese_plan.first_stage_input(config, {**RUN, "method": m})["first_stage"]
              for m in ("prefix_then_lora", "prefix_then_ss_lora")]
    assert inputs == ["results/models/vaswani/colbert/prefix/epochs7/fold2-seed3.pt"] * 2
    assert artefact(inputs[0])[0] == "first_stage_weights"


def test_training_params_give_each_stage_its_epochs():
    params = PARAMS["training"]
    config = _config(training__sequential={"first_epochs": 7, "second_epochs": 1})
    assert params(config, {**RUN, "method": "lora"})["epochs"] == CONFIG["training"]["epochs"]
    assert params(config, {**RUN, "method": "prefix_then_lora"})["epochs"] == 1          # n
    assert params(config, {**RUN, "method": "prefix", "epochs": "7"})["epochs"] == 7      # m, from the path
    marco = params(CONFIG, {**RUN, "dataset": "msmarco-doc", "method": "prefix_then_lora"})
    assert marco["epochs"] == 3 and marco["sequential"] == {"first_epochs": 10, "second_epochs": 3}


def test_a_ranker_gets_only_its_own_options():
    settings = PARAMS["ranker"](CONFIG, {**RUN, "ranker": "twinbert"})
    assert settings["twinbert"] == CONFIG["ranker"]["twinbert"] and "colbert" not in settings
    assert settings["max_doc_len"] == CONFIG["ranker"]["max_doc_len"]


def test_a_table_reads_every_run_of_its_rows_in_one_order():
    metrics = semi_siamese_plan.report_runs(CONFIG, "tables", "table5", PATHS.metrics)
    methods = ["full", "prompt", "prefix", "lora", "lora_pp", "prefix_then_lora", "lora_then_prefix",   # lft_best
               "ss_prefix", "ss_lora", "prefix_then_ss_lora", "ss_lora_then_prefix"]
    assert len(metrics) == 2 * len(methods) * 5 * 3 == len(set(metrics))
    assert metrics[0] == "results/metrics/vaswani/twinbert/full/fold1-seed1.json"
    assert metrics[1] == "results/metrics/vaswani/twinbert/full/fold1-seed2.json"
    assert [artefact(p)[1]["method"] for p in metrics[::15]][:len(methods)] == methods
    assert semi_siamese_plan.reference_runs(CONFIG) == [f"results/metrics/vaswani/{system}/fold{k}.json"
                                           for system in ("bm25", "backbone") for k in range(1, 6)]
    assert semi_siamese_plan.reference_run({"dataset": "vaswani", "reference": "backbone"}) == "results/runs/vaswani/backbone.run"


def test_the_table_layout_names_rows_columns_and_the_baseline():
    spec = report_layout(CONFIG, "tables", "table5")
    assert spec["datasets"] == [["vaswani", "Vaswani"]] and spec["metrics"] == CONFIG["experiment"]["metrics"]
    assert spec["baseline"] == BASELINE
    best = next(row for row in spec["groups"][0]["rows"] if row["method"] == BEST_OF)
    assert best["candidates"] == [m for m in CONFIG["tables"]["table4"]["methods"] if m != "full"]


def test_resources_take_the_datasets_overrides():
    config = _config()
    config["datasets"]["vaswani"]["resources"] = {"train": {"runtime": 5}}
    assert plan.resources(config, "train", RUN) == {**CONFIG["resources"]["train"], "runtime": 5}
    assert plan.resources(config, "table", {"table": "table5"}) == {"gpu": 0, **CONFIG["resources"]["table"]}


def test_wildcards_never_match_a_path_separator():
    import re

    constraints = wildcard_constraints()
    for name in ("dataset", "table", "figure"):
        assert re.fullmatch(constraints[name], "vaswani-2.b")
        assert not re.fullmatch(constraints[name], "../x") and not re.fullmatch(constraints[name], "a/b")
