"""The Adapters-SPLADE system's contract with the workflow: its artefacts (retrievers, impact indexes, runs and
their FLOPS, the MarginMSE teacher, Table 7's rerankers, metrics, tables) and what each of its jobs gets from the
config (``PARAMS``)."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..contract.params import Config, ParamFunction, Wildcards, job_execution, is_beir
from ..contract.retrieval import retrieval_layout
from ..contract.paths import CorePaths
from ..contract.wildcards import KEY, WILDCARDS as CORE_WILDCARDS, Artefacts

SPARSE = "results/sparse"                                     # SPLADE retrievers (Adapters-SPLADE paper)
SPARSE_PAPER = "splade-adapters"                              # their tables' folder
SPLADE = "{dataset}/{backbone}/{splade}/fold{fold}-seed{seed}"   # one trained SPLADE retriever
SPLADE_TARGET = "{target}/" + SPLADE                          # ... searching the collection ``target``
RERANKER = "{dataset}/{reranker}/fold{fold}-seed{seed}"       # one trained reranker of SPLADE's top documents
RERANKED = "{target}/" + RERANKER                             # ... reranking on the collection ``target``


@dataclass(frozen=True)
class SpladePaths:
    """Path patterns of the Adapters-SPLADE system's artefacts."""

    splade_model: str = f"{SPARSE}/models/{SPLADE}"
    splade_summary: str = f"{SPARSE}/models/{SPLADE}.json"
    splade_index: str = f"{SPARSE}/index/{SPLADE_TARGET}"
    splade_run: str = f"{SPARSE}/runs/{SPLADE_TARGET}.run"
    splade_run_metadata: str = f"{SPARSE}/runs/{SPLADE_TARGET}.ir_metadata.yaml"
    splade_flops: str = f"{SPARSE}/runs/{SPLADE_TARGET}.flops.json"     # each query's FLOPS against the index
    splade_metrics: str = f"{SPARSE}/metrics/{SPLADE_TARGET}.json"
    splade_bm25_metrics: str = f"{SPARSE}/metrics/{{target}}/bm25/fold{{fold}}.json"   # BM25's row, SPLADE's metrics
    splade_teacher: str = f"{SPARSE}/teacher/{{dataset}}.run"    # a cross-encoder's scores (MarginMSE) as a run
    splade_teacher_scores: str = f"{SPARSE}/teacher/scores.pkl.gz"   # the teacher's file, downloaded and checked
    reranker_model: str = f"{SPARSE}/rerankers/models/{RERANKER}"     # Table 7's cross-encoders
    reranker_summary: str = f"{SPARSE}/rerankers/models/{RERANKER}.json"
    reranked_run: str = f"{SPARSE}/rerankers/runs/{RERANKED}.run"
    reranked_run_metadata: str = f"{SPARSE}/rerankers/runs/{RERANKED}.ir_metadata.yaml"
    reranked_metrics: str = f"{SPARSE}/rerankers/metrics/{RERANKED}.json"
    splade_table_tex: str = f"results/tables/{SPARSE_PAPER}/{{table}}.tex"
    splade_table_json: str = f"results/tables/{SPARSE_PAPER}/{{table}}.json"
    splade_table_csv: str = f"results/tables/{SPARSE_PAPER}/{{table}}.csv"


PATHS = SpladePaths()


# a method's own training settings (Table 2's λ's, Tables 4-6's budgets, Table 5's rounds' hard negatives)
SPLADE_OVERRIDES = ("steps", "batch_size", "validate_every", "warmup_steps", "regularisation", "negative_depth")


def _sparse(config: Config) -> dict:
    return config["sparse_retrieval"]


def _splade(config: Config, wildcards: Wildcards) -> dict:
    """A SPLADE retriever's backbone (its name, logit offset, layers), method, training settings (the common ones,
    the method's own on top) and where it runs (``execution``: device and precision)."""
    sparse = _sparse(config)
    backbone = sparse["backbones"][wildcards["backbone"]]
    method = sparse["methods"][wildcards["splade"]]
    return {"backbone": backbone["name"], "layers": sparse["layers"],
            "method": {"name": method["kind"],
                       **{key: value for key, value in method.items() if key not in ("kind", *SPLADE_OVERRIDES)}},
            "train": {**sparse["train"], **{key: method[key] for key in SPLADE_OVERRIDES if key in method},
                      "logit_offset": backbone["logit_offset"], **_validation_metric(config, wildcards)},
            "execution": job_execution(config)}


def _validation_metric(config: Config, wildcards: Wildcards) -> dict:
    """The training dataset's ``validation_metric``, which picks a SPLADE retriever's or reranker's checkpoint."""
    return {"validation_metric": config["datasets"][wildcards["dataset"]]["validation_metric"]} \
        if "dataset" in wildcards else {}


def _splade_reranker(config: Config, wildcards: Wildcards) -> dict:
    """A reranker's backbone, method and training settings, and where it runs."""
    rerankers = _sparse(config)["rerankers"]
    spec = rerankers["models"][wildcards["reranker"]]
    return {"backbone": spec["backbone"],
            "method": {"name": spec["kind"], **{k: v for k, v in spec.items() if k not in ("kind", "backbone")}},
            "train": {**rerankers["train"], **_validation_metric(config, wildcards)},
            "execution": job_execution(config)}


def splade_folds(config: Config, dataset: str) -> list[str]:
    """The folds a SPLADE retriever trains on or a collection is evaluated on: ``sparse_retrieval.folds`` for its
    dataset, every fold of another (one for a pre-split collection)."""
    if dataset == _sparse(config)["dataset"]:
        return [str(fold) for fold in _sparse(config)["folds"]]
    if dataset not in config["datasets"]:
        return []                  # a name the config check reports (``peftir.splade.config``)
    from ..data.folds import fold_ids

    return fold_ids(config["datasets"][dataset])


def splade_scope(wildcards: Wildcards) -> str:
    """Which queries a SPLADE run is evaluated on: its fold's test queries on the collection it trained on (and
    BM25's, on its own folds), every test query of another (``target``): a zero-shot collection's, or TREC DL's
    beside MS MARCO's dev queries."""
    return "fold" if wildcards.get("dataset", wildcards["target"]) == wildcards["target"] else "all"


def splade_report_layout(config: Config, name: str) -> dict:
    """A SPLADE table's layout: a dense table's (``dense_report_layout``) whose cells name ``splade`` methods, the
    dataset they trained on and a ``target`` collection (``searched``), R-FLOPS a metric like the others; a table
    may hold retrievers trained on several datasets (Table 5), each with its folds (``splade_folds``)."""
    return retrieval_layout(_sparse(config), _sparse(config)["tables"][name], f"{SPARSE_PAPER}/{name}",
                             lambda dataset: splade_folds(config, dataset))


WILDCARDS = {"splade": KEY, "reranker": KEY}
# the artefacts this system's jobs read and write, matched back from their paths
ARTEFACTS = Artefacts([CorePaths(), PATHS], {**CORE_WILDCARDS, **WILDCARDS})

PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "splade": _splade,
    "splade_index": lambda config, wc: _sparse(config)["index"],
    "splade_teacher": lambda config, wc: _sparse(config)["teacher"],
    "splade_evaluation": lambda config, wc: {"metrics": list(_sparse(config)["metrics"]), "scope": splade_scope(wc),
                                             "drop_self_hits": is_beir(config, wc["target"])},
    "splade_table": lambda config, wc: splade_report_layout(config, wc["table"]),
    "splade_reranker": _splade_reranker,
    "splade_rerank": lambda config, wc: {**_sparse(config)["rerankers"]["rerank"], "scope": splade_scope(wc)},
})
