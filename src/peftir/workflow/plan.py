"""Planning the DAG from the config alone (no data): which files each job reads, what it asks for.

The rules' input functions and resources come from here; paths from ``peftir.layout``. Each
function takes the config and, where it depends on one job, that job's wildcards as a dict.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..data.folds import fold_ids
from ..layout import PATHS, REFERENCES, dataset_training, first_stage, kept, row_methods, train_pairs

Config = Mapping[str, Any]


def datasets(config: Config) -> list[str]:
    return list(config["experiment"]["datasets"])


def folds_of(config: Config, dataset: str) -> list[str]:
    """Fold ids of a dataset, known from its config entry alone."""
    return fold_ids(config["datasets"][dataset])


def reports(config: Config, kind: str) -> list[str]:
    """The tables (or figures) that have a ranker this experiment runs."""
    return [name for name, spec in config[kind].items() if kept(config, spec["rankers"])]


def collection(wildcards: Mapping[str, str]) -> dict[str, str]:
    """A dataset's exported files, by the names ``peftir.rankers.inputs.Collection`` takes."""
    return {name: getattr(PATHS, name).format(dataset=wildcards["dataset"])
            for name in ("queries", "qrels", "docs", "docs_lookup", "folds")}


def triples_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A training job reads the dataset's fixed training triples when it has them (MS MARCO)."""
    if train_pairs(config, wildcards["dataset"])["source"] == "bm25":
        return {}
    return {"triples": PATHS.triples.format(dataset=wildcards["dataset"])}


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
            for ranker in kept(config, spec["rankers"])
            for method in methods
            for fold in folds_of(config, dataset)
            for seed in config["experiment"]["seeds"]]


def report_file(config: Config, report: str) -> str:
    """A table's .tex or a figure's .pdf, by name (what a crate is made of)."""
    if report in config["tables"]:
        return PATHS.table_tex.format(table=report)
    if report in config["figures"]:
        return PATHS.figure_pdf.format(figure=report)
    raise ValueError(f"no table or figure named {report!r}; tables: {', '.join(config['tables'])}; "
                     f"figures: {', '.join(config['figures'])}")


def reference_runs(config: Config) -> list[str]:
    """The reference systems' per-fold metrics files (BM25, the untrained backbone): every table's reference rows."""
    return [PATHS.reference_metrics.format(dataset=d, reference=r, fold=f)
            for r in config["experiment"]["references"] for d in datasets(config) for f in folds_of(config, d)]


def reference_run(wildcards: Mapping[str, str]) -> str:
    """The run a reference system's metrics are computed from."""
    return getattr(PATHS, REFERENCES[wildcards["reference"]]).format(dataset=wildcards["dataset"])


def resources(config: Config, rule: str, wildcards: Mapping[str, str]) -> dict:
    """What one job of ``rule`` asks for: ``config.resources.<rule>`` with the dataset's overrides
    (``datasets.<name>.resources.<rule>``); threads, mem_mb, runtime (minutes), gpu, and gpu_model
    where set. Partitions, account and QoS are site settings of the SLURM profile, not config."""
    dataset = wildcards.get("dataset")
    overrides = config["datasets"][dataset].get("resources", {}).get(rule, {}) if dataset else {}
    return {"gpu": 0, **config["resources"][rule], **overrides}

