"""The vocabulary every system's config checker speaks: one error type whose message is one line naming the key,
its value and what it may be; names that must be among the allowed ones; backbones named ``pretrained:<run>``; the
datasets, folds, metrics and table cells a retrieval section names. Standard library and ir_measures only."""
from __future__ import annotations

from typing import Callable

from ..data.export import DEFAULT_TEXT
from .backbones import EMBEDDED, embedded_problem, hub_pin, looks_local
from .measures import GEOMETRY_METRICS, measure
from .paths import MLM_HEAD_RUN, pretrained_run


class ConfigError(ValueError):
    """A configuration problem: its message names the key, its value and what it may be, on one line."""


def known(value: object, allowed, key: str, what: str) -> None:
    if value not in allowed:
        raise ConfigError(f"config key {key} = {value!r}: allowed: {', '.join(map(str, allowed))} ({what})")


def check_backbone_name(config: dict, name: str, key: str, embedded: tuple[str, ...] = (EMBEDDED,)) -> None:
    """A backbone named ``embedded:<model>`` is one of ``embedded`` that an installed package provides; one named
    ``pretrained:<run>`` names a run of ``pretraining.runs``, or ``pretrained:base/mlm-head`` the pretraining backbone
    whose MLM head the workflow fits; one pinned to a hub commit names all 40 hex digits of it."""
    problem = embedded_problem(name, embedded)
    if problem:
        raise ConfigError(f"config key {key} = {name!r}: {problem}")
    if "@" in name and not looks_local(name) and hub_pin(name) is None:      # a directory may hold an @
        raise ConfigError(f"config key {key} = {name!r}: a hub backbone is pinned as <repository>@<commit>, the "
                          f"commit's 40 hex digits (a branch or tag moves, a short hash may grow ambiguous)")
    run = pretrained_run(name)
    if run is None:
        return
    if run == MLM_HEAD_RUN:
        if ((config.get("pretraining") or {}).get("backbone") or {}).get("mlm_head") is None:
            raise ConfigError(f"config key {key} = {name!r}: names the pretraining backbone with its MLM head "
                                   f"fitted, but pretraining.backbone.mlm_head is not set")
        return
    runs = (config.get("pretraining") or {}).get("runs", {})
    if run not in runs:
        raise ConfigError(f"config key {key} = {name!r}: no pretraining run {run!r}; runs: "
                               f"{', '.join(runs) or 'none (the pretraining section is empty)'}")
    if "prompts" in runs[run]:
        raise ConfigError(f"config key {key} = {name!r}: run {run!r} saves deep prompts, not a backbone; a dpt "
                               f"method starts from them (dense_retrieval.methods.<name>.prompts)")


def check_table(key: str, spec: dict, cells: list[dict], check_cell: Callable[[dict, str], None]) -> None:
    """A retrieval table's rows and cells (``cells``: row by row, the row's settings with the column's on top):
    distinct row labels, its baseline among them, a copied row's values one per column; each measured cell a
    metric, checked with the rest of what it names by ``check_cell(cell, where)``."""
    labels = [row["label"] for row in spec["rows"]]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"config key {key}.rows: labels must differ (they name the rows)")
    if spec.get("baseline") is not None:
        known(spec["baseline"], labels, f"{key}.baseline", "the labels of its rows")
    for index, row in enumerate(spec["rows"]):
        values = (row.get("reported") or {}).get("values")
        if values is not None and len(values) != len(spec["columns"]):
            raise ConfigError(f"config key {key}.rows[{index}].reported.values: {len(values)} values for "
                                   f"{len(spec['columns'])} columns")
        if row.get("reference") and "reported" in row:
            raise ConfigError(f"config key {key}.rows[{index}]: a row is a reference or reported, not both")
    columns = [column["label"] for column in spec["columns"]]
    for column in spec["columns"]:
        for label in column.get("mean_of") or []:
            averaged = [c for c in spec["columns"] if c["label"] == label and not c.get("mean_of")]
            if not averaged:
                raise ConfigError(f"config key {key} column {column['label']!r}.mean_of: {label!r} is not the "
                                       f"label of another measured column; columns: {', '.join(columns)}")
    for index, cell in enumerate(cells):
        where = f"row {labels[index // len(spec['columns'])]!r}, column {index % len(spec['columns'])}"
        if cell.get("mean_of"):
            continue
        if "metric" not in cell:
            raise ConfigError(f"config key {key}: {where} has no metric (set it on the column or row)")
        if not cell.get("reported"):
            check_cell(cell, where)


def needs(cell: dict, settings: tuple[str, ...], key: str, where: str) -> None:
    """A measured cell names each of ``settings`` on its row, its column or the table's defaults."""
    for setting in settings:
        if setting not in cell:
            raise ConfigError(f"config key {key}: {where} names no {setting} (on its row, column or the "
                                   f"table's defaults)")


def check_metric(metric: str, key: str, where: str) -> None:
    """An ir_measures measure, or Wang & Isola's alignment or uniformity (DPTDR Table 8)."""
    if metric in GEOMETRY_METRICS:
        return
    try:
        measure(metric)
    except ValueError as problem:
        raise ConfigError(f"config key {key}: {where}: {problem}; or {', '.join(GEOMETRY_METRICS)} (Wang & "
                               f"Isola's, DPTDR Table 8)") from None


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
            raise ConfigError(f"config key {key}[{index}] = {metric!r}: {problem}{note}") from None


def text_fields(record_class: type) -> list[str]:
    """A record type's text fields (not ids, not bytes such as a WARC body) and, where ir_datasets gives
    one, ``default_text`` (its text of the record: for web pages, the parsed HTML's title and body)."""
    types = getattr(record_class, "__annotations__", {})
    names = [name for name in record_class._fields if not name.endswith("_id") and types.get(name, str) is str]
    return names + [DEFAULT_TEXT] * hasattr(record_class, DEFAULT_TEXT)
