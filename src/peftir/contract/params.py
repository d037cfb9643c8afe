"""What every system's jobs get from the config alike: a dataset's export and folds settings, BM25's, where a
model runs (``execution``), the publication metadata. A system's own params are in its ``contract`` module."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping

Config = Mapping[str, Any]
Wildcards = Mapping[str, str]
ParamFunction = Callable[[Config, Wildcards], Any]
EXPORT_KEYS = ("irds", "query_field", "doc_fields", "splits", "topics", "licence")   # a label change must not re-export
FOLD_KEYS = ("folds", "splits")


def dataset_subset(config: Config, dataset: str, keys: tuple[str, ...]) -> dict:
    spec = config["datasets"][dataset]
    return {key: spec[key] for key in keys if key in spec}


def job_execution(config: Config) -> dict:
    """Where a job's model runs: the device and precision of ``execution`` (not the warm worker's setting), and
    ``compile`` where it is on (left out when off, so a config without the key asks the jobs it always did)."""
    execution = {key: config["execution"][key] for key in ("device", "precision")}
    return {**execution, "compile": True} if config["execution"].get("compile") else execution


def is_beir(config: Config, dataset: str) -> bool:
    """Whether a dataset is a BEIR collection, evaluated as BEIR evaluates (a query's own id is no hit)."""
    return config["datasets"][dataset]["irds"].startswith("beir/")


def train_pairs(config: Config, dataset: str) -> dict:
    """Where a dataset's training triples come from: sampled from the BM25 candidates of the training
    queries (``bm25``, the default), or a fixed file made from its training split (``docpairs``,
    ``doctriples``: ``peftir.data.triples``), which then needs no BM25 run of the training queries."""
    spec = config["datasets"][dataset]
    pairs = spec.get("train_pairs", {"source": "bm25"})
    return pairs if pairs["source"] == "bm25" else {**pairs, "irds": spec["splits"]["train"]}


def _bm25(config: Config, wildcards: Wildcards) -> dict:
    """BM25's settings and the pre-assigned splits it ranks (None: every query, as cross-validation needs)."""
    fixed = train_pairs(config, wildcards["dataset"])["source"] != "bm25"
    return {**config["bm25"], "splits": ["valid", "test"] if fixed else None}


PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "export": lambda config, wc: dataset_subset(config, wc["dataset"], EXPORT_KEYS),
    "folds": lambda config, wc: dataset_subset(config, wc["dataset"], FOLD_KEYS),
    # how a dataset's runs are judged: None (its qrels) or "dpr" (DPR's answer matching: peftir.evaluation.answers)
    "answers": lambda config, wc: config["datasets"][wc["dataset"]].get("answers"),
    "train_pairs": lambda config, wc: train_pairs(config, wc["dataset"]),
    "bm25": _bm25,
    "execution": lambda config, wc: job_execution(config),
    "publication": lambda config, wc: config["publication"],
    "reproduction": lambda config, wc: {**{key: config["reproduction"][key] for key in ("tolerance", "stand_ins",
                                                                                           "budget")},
                                        "original_runs": config["reproduction"]["original_runs"].get(wc["report"])},
    "significance": lambda config, wc: config["significance"],
    # the datasets a build scores in place of a paper's (vaswani for Robust04), to find the paper's number of a cell
    "stand_ins": lambda config, wc: config["reproduction"]["stand_ins"],
    "budget": lambda config, wc: config["reproduction"]["budget"],
})
