"""Planning the Semi-Siamese system's jobs from the config alone (no data): the datasets and folds of the
experiment, the tables and figures it builds, and which files a training or reference job reads."""
from __future__ import annotations

from typing import Any, Mapping

from ..contract.params import train_pairs
from ..contract.paths import CORE
from ..data.folds import fold_ids
from .contract import (PATHS, REFERENCES, dataset_training, first_stage, layout_cell_ids, report_layout,
                       row_methods, table_rankers)

Config = Mapping[str, Any]


def datasets(config: Config) -> list[str]:
    """The collections the rankers train and rerank on (``experiment.datasets``)."""
    return list(config["experiment"]["datasets"])


def folds_of(config: Config, dataset: str) -> list[str]:
    """Fold ids of a dataset, known from its config entry alone."""
    return fold_ids(config["datasets"][dataset])


def reports(config: Config, kind: str) -> list[str]:
    """The tables (or figures) that have a ranker this experiment runs."""
    return [name for name, spec in config[kind].items() if table_rankers(config, spec["rankers"])]


def default_target(config: Config) -> list[str]:
    """What ``snakemake`` builds with no target: the paper's main table, Table 5, where the config builds it, else
    every table it builds."""
    tables = reports(config, "tables")
    return [PATHS.table_tex.format(table=name) for name in (["table5"] if "table5" in tables else tables)]


def triples_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A training job reads the dataset's fixed training triples when it has them (MS MARCO)."""
    if train_pairs(config, wildcards["dataset"])["source"] == "bm25":
        return {}
    return {"triples": CORE.triples.format(dataset=wildcards["dataset"])}


def first_stage_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A sequential hybrid starts from its first part's kept weights: the standalone run's when m equals
    the standalone epochs (the paper's setting), else that part's run of m epochs (``epochs{m}/``),
    which every hybrid with the same first part shares."""
    first = first_stage(wildcards["method"])
    if first is None:
        return {}
    settings = dataset_training(config, wildcards["dataset"])
    m = settings["sequential"]["first_epochs"]
    named = {**wildcards, "method": first, "epochs": m}
    if m == settings["epochs"]:
        return {"first_stage": PATHS.weights.format(**named)}
    return {"first_stage": PATHS.first_stage_weights.format(**named)}


def report_runs(config: Config, kind: str, name: str, pattern: str) -> list[str]:
    """``pattern`` (``PATHS.metrics`` or ``PATHS.summary``) for every run a table or figure summarises,
    in one fixed order: dataset, ranker, method, fold, seed."""
    spec = config[kind][name]
    methods = list(dict.fromkeys(m for row in spec["methods"] for m in row_methods(config, spec, row)))
    return [pattern.format(dataset=dataset, ranker=ranker, method=method, fold=fold, seed=seed)
            for dataset in datasets(config)
            for ranker in table_rankers(config, spec["rankers"])
            for method in methods
            for fold in folds_of(config, dataset)
            for seed in config["experiment"]["seeds"]]


def reference_runs(config: Config) -> list[str]:
    """The reference systems' per-fold metrics files (BM25, the untrained backbone): every table's reference rows."""
    return [PATHS.reference_metrics.format(dataset=d, reference=r, fold=f)
            for r in config["experiment"]["references"] for d in datasets(config) for f in folds_of(config, d)]


def reference_run(wildcards: Mapping[str, str]) -> str:
    """The run a reference system's metrics are computed from."""
    kind = REFERENCES[wildcards["reference"]]
    return getattr(CORE if hasattr(CORE, kind) else PATHS, kind).format(dataset=wildcards["dataset"])


def report_files(config: Config) -> dict[str, str]:
    """Every table's .tex and figure's .pdf of the config by its crate name (``table5``, ``figure4``)."""
    return {**{name: PATHS.table_tex.format(table=name) for name in config["tables"]},
            **{name: PATHS.figure_pdf.format(figure=name) for name in config["figures"]}}


def report_cells(config: Config) -> dict[str, list[str]]:
    """Every cell id of every table the config builds, by the table's crate name, before any job runs."""
    return {name: layout_cell_ids(report_layout(config, "tables", name)) for name in reports(config, "tables")}
