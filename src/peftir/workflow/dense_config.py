"""Checks of the pretraining and dense retrieval sections that the schema cannot express: what they name exists
(datasets, runs, backbones, methods, rows), a coCondenser starts from a Condenser, depths fit in the runs they read,
a table's cells are complete. Called by ``peftir.workflow.config.validate`` before any job runs."""
from __future__ import annotations

from typing import Callable

from ..layout import MLM_HEAD_RUN, PRETRAINING_UNITS, measure, pretrained_run


class DenseConfigError(ValueError):
    """One line naming the config key, its value and what it may be (``ConfigError`` re-raises it)."""


def known(value: object, allowed, key: str, what: str) -> None:
    if value not in allowed:
        raise DenseConfigError(f"config key {key} = {value!r}: allowed: {', '.join(map(str, allowed))} ({what})")


def check_backbone_name(config: dict, name: str, key: str) -> None:
    """A backbone named ``pretrained:<run>`` names a run of ``pretraining.runs``, or ``pretrained:base/mlm-head``
    the pretraining backbone whose MLM head the workflow fits."""
    run = pretrained_run(name)
    if run is None:
        return
    if run == MLM_HEAD_RUN:
        if ((config.get("pretraining") or {}).get("backbone") or {}).get("mlm_head") is None:
            raise DenseConfigError(f"config key {key} = {name!r}: names the pretraining backbone with its MLM head "
                                   f"fitted, but pretraining.backbone.mlm_head is not set")
        return
    runs = (config.get("pretraining") or {}).get("runs", {})
    if run not in runs:
        raise DenseConfigError(f"config key {key} = {name!r}: no pretraining run {run!r}; runs: "
                               f"{', '.join(runs) or 'none (the pretraining section is empty)'}")


def check_pretraining(config: dict) -> None:
    pretraining = config["pretraining"]
    head = pretraining["backbone"]["mlm_head"]
    if head is not None:
        known(head["corpus"], config["datasets"], "pretraining.backbone.mlm_head.corpus", "the keys of `datasets`")
    for name, spec in pretraining["runs"].items():
        key = f"pretraining.runs.{name}"
        if name == MLM_HEAD_RUN.split("/")[0]:
            raise DenseConfigError(f"config key {key}: {name!r} is taken (results/pretrained/{MLM_HEAD_RUN} is the "
                                   f"backbone with its MLM head fitted); name the run otherwise")
        known(spec["corpus"], config["datasets"], f"{key}.corpus", "the keys of `datasets`")
        warm = spec.get("warm_start")
        if (spec["objective"] == "cocondenser") != (warm is not None):
            raise DenseConfigError(f"config key {key}: a cocondenser run names the Condenser run it starts from "
                                   f"(warm_start), and only a cocondenser run does")
        if warm is not None:
            condensers = [run for run, other in pretraining["runs"].items() if other["objective"] == "condenser"]
            known(warm, condensers, f"{key}.warm_start", "the condenser runs of pretraining.runs")
        if "units" in spec:
            known(spec["units"], PRETRAINING_UNITS[spec["objective"]], f"{key}.units",
                  f"what objective {spec['objective']} trains on")
        settings = {**pretraining["settings"], **spec.get("settings", {})}
        if settings["chunk"] > 2 * settings["batch_size"]:
            raise DenseConfigError(f"config key {key}: chunk = {settings['chunk']} is more than the "
                                   f"{2 * settings['batch_size']} rows of a batch")


def _check_method(name: str, spec: dict) -> None:
    key = f"dense_retrieval.methods.{name}"
    dpt = ("length", "reparametrise", "mlp_hidden", "dropout")
    if spec["kind"] == "dpt":
        missing = [setting for setting in dpt if setting not in spec]
        if missing:
            raise DenseConfigError(f"config key {key}: deep prompt tuning needs {', '.join(missing)}")
    elif any(setting in spec for setting in dpt):
        raise DenseConfigError(f"config key {key}: {', '.join(s for s in dpt if s in spec)} are dpt settings; "
                               f"this method is full fine-tuning")


def check_table(key: str, spec: dict, cells: list[dict], check_cell: Callable[[dict, str], None]) -> None:
    """A retrieval table's rows and cells (``cells``: row by row, the row's settings with the column's on top):
    distinct row labels, its baseline among them, a copied row's values one per column; each measured cell a
    metric, checked with the rest of what it names by ``check_cell(cell, where)``."""
    labels = [row["label"] for row in spec["rows"]]
    if len(set(labels)) != len(labels):
        raise DenseConfigError(f"config key {key}.rows: labels must differ (they name the rows)")
    if spec.get("baseline") is not None:
        known(spec["baseline"], labels, f"{key}.baseline", "the labels of its rows")
    for index, row in enumerate(spec["rows"]):
        values = (row.get("reported") or {}).get("values")
        if values is not None and len(values) != len(spec["columns"]):
            raise DenseConfigError(f"config key {key}.rows[{index}].reported.values: {len(values)} values for "
                                   f"{len(spec['columns'])} columns")
        if row.get("reference") and "reported" in row:
            raise DenseConfigError(f"config key {key}.rows[{index}]: a row is a reference or reported, not both")
    columns = [column["label"] for column in spec["columns"]]
    for column in spec["columns"]:
        for label in column.get("mean_of") or []:
            averaged = [c for c in spec["columns"] if c["label"] == label and not c.get("mean_of")]
            if not averaged:
                raise DenseConfigError(f"config key {key} column {column['label']!r}.mean_of: {label!r} is not the "
                                       f"label of another measured column; columns: {', '.join(columns)}")
    for index, cell in enumerate(cells):
        where = f"row {labels[index // len(spec['columns'])]!r}, column {index % len(spec['columns'])}"
        if cell.get("mean_of"):
            continue
        if "metric" not in cell:
            raise DenseConfigError(f"config key {key}: {where} has no metric (set it on the column or row)")
        if not cell.get("reported"):
            check_cell(cell, where)


def needs(cell: dict, settings: tuple[str, ...], key: str, where: str) -> None:
    """A measured cell names each of ``settings`` on its row, its column or the table's defaults."""
    for setting in settings:
        if setting not in cell:
            raise DenseConfigError(f"config key {key}: {where} names no {setting} (on its row, column or the "
                                   f"table's defaults)")


def _check_metric(metric: str, key: str, where: str) -> None:
    try:
        measure(metric)
    except ValueError as problem:
        raise DenseConfigError(f"config key {key}: {where}: {problem}") from None


def _check_dense_table(config: dict, paper: str, name: str, spec: dict) -> None:
    from .plan import dense_cells

    dense, key = config["dense_retrieval"], f"dense_retrieval.tables.{paper}.{name}"

    def check_cell(cell: dict, where: str) -> None:
        _check_metric(cell["metric"], key, where)
        known(cell["dataset"], config["datasets"], f"{key} ({where}) dataset", "the keys of `datasets`")
        needed = {"untrained": ("backbone",), "bm25": ()}.get(cell.get("reference"),
                                                              ("backbone", "retriever", "negatives"))
        needs(cell, needed, key, where)
        if "backbone" in needed:
            known(cell["backbone"], dense["backbones"], f"{key} ({where}) backbone", "dense_retrieval.backbones")
        if "retriever" in needed:
            known(cell["retriever"], dense["methods"], f"{key} ({where}) retriever", "dense_retrieval.methods")

    check_table(key, spec, dense_cells(config, paper, name), check_cell)


def check_dataset_and_folds(config: dict, section: str) -> None:
    """A retrieval section's ``dataset`` is a dataset of the config and its ``folds`` are that dataset's."""
    from ..data.folds import fold_ids

    spec = config[section]
    known(spec["dataset"], config["datasets"], f"{section}.dataset", "the keys of `datasets`")
    folds = fold_ids(config["datasets"][spec["dataset"]])
    for index, fold in enumerate(spec["folds"]):
        known(str(fold), folds, f"{section}.folds[{index}]", f"the folds of {spec['dataset']}")


def check_metrics(metrics: list[str], key: str, note: str = "") -> None:
    """Each of a section's metrics is an ir_measures measure a provider computes."""
    for index, metric in enumerate(metrics):
        try:
            measure(metric)
        except ValueError as problem:
            raise DenseConfigError(f"config key {key}[{index}] = {metric!r}: {problem}{note}") from None


def check_dense_retrieval(config: dict) -> None:
    dense = config["dense_retrieval"]
    check_dataset_and_folds(config, "dense_retrieval")
    for name, backbone in dense["backbones"].items():
        check_backbone_name(config, backbone, f"dense_retrieval.backbones.{name}")
    for name, spec in dense["methods"].items():
        _check_method(name, spec)
    check_metrics(dense["metrics"], "dense_retrieval.metrics")
    bm25 = config["bm25"]["depth"]
    for key, value in (("train.negative_depth", dense["train"]["negative_depth"]), ("mining.depth",
                                                                                    dense["mining"]["depth"])):
        if value > bm25:
            raise DenseConfigError(f"config key dense_retrieval.{key} = {value}: at most bm25.depth = {bm25} "
                                   f"(the BM25 run it reads)")
    if dense["mining"]["depth"] > dense["search"]["depth"]:
        raise DenseConfigError(f"config key dense_retrieval.mining.depth = {dense['mining']['depth']}: at most "
                               f"search.depth = {dense['search']['depth']} (the first-round run it reads)")
    shared = dense["mining"].get("first_round")
    if shared:
        known(shared["backbone"], dense["backbones"], "dense_retrieval.mining.first_round.backbone",
              "the keys of dense_retrieval.backbones")
        known(shared["retriever"], dense["methods"], "dense_retrieval.mining.first_round.retriever",
              "the keys of dense_retrieval.methods")
    for paper, tables in dense["tables"].items():
        for name, spec in (tables or {}).items():
            _check_dense_table(config, paper, name, spec)
