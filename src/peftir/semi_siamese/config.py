"""Checks of the Semi-Siamese sections that the schema cannot express: the experiment's datasets and references,
every table's and figure's rows labelled and buildable for its rankers (semi-Siamese methods on bi-encoders only),
the lft_best row's source table, every metric a measure here (sizes and depths: ``peftir.semi_siamese.relations``).
Called by ``peftir.pipeline.config.validate`` before any job runs, as this system's check
(``peftir.semi_siamese.system``)."""
from __future__ import annotations

from pathlib import Path

from ..contract import backbones
from ..contract.checks import ConfigError, check_backbone_name, known
from ..contract.paths import pretrained_run
from ..contract.measures import measure
from .contract import BEST_OF, METHODS, RANKERS


def check_semi_siamese(config: dict) -> None:
    """The experiment, its reports and its rankers' backbone."""
    check_experiment(config)
    _check_backbone(config["backbone"]["name"])
    check_backbone_name(config, config["backbone"]["name"], "backbone.name")


def _check_backbone(name: str) -> None:
    """A local backbone must exist (its depth bounds ``layers``: ``peftir.semi_siamese.relations``)."""
    if pretrained_run(name):
        return                  # made by a pretraining run (its name checked by ``check_backbone_name``)
    if backbones.looks_local(name) and not Path(name).expanduser().is_dir():
        raise ConfigError(f"config key backbone.name = {name!r}: no such directory (a local model directory, "
                          f"a Hugging Face hub name or {backbones.EMBEDDED})")


def check_experiment(config: dict) -> None:
    _check_metrics(config)
    for index, name in enumerate(config["experiment"]["datasets"]):
        known(name, config["datasets"], f"experiment.datasets[{index}]", "the keys of `datasets`")
    for index, name in enumerate(config["experiment"]["references"]):
        if name not in config["labels"]["references"]:
            raise ConfigError(f"config key labels.references: no label for {name!r} (experiment.references[{index}])")
    for kind in ("tables", "figures"):
        for name, spec in config[kind].items():
            _check_report(config, kind, name, spec)


def _check_report(config: dict, kind: str, name: str, spec: dict) -> None:
    """A table's or figure's rows must be labelled, buildable for its rankers and, for lft_best, resolvable."""
    key = f"{kind}.{name}"
    for ranker in spec["rankers"]:
        if ranker not in config["labels"]["rankers"]:
            raise ConfigError(f"config key labels.rankers: no label for {ranker!r} used in {key}")
    labels = {**config["labels"]["methods"], **spec.get("labels", {})}
    for index, method in enumerate(spec["methods"]):
        if method not in labels:
            raise ConfigError(f"config key labels.methods: no label for {method!r} used in {key}")
        if method == BEST_OF:
            _check_best_of(config, name, spec)
            continue
        if METHODS[method].bi_encoder_only and any(not RANKERS[r].bi_encoder for r in spec["rankers"]):
            raise ConfigError(f"config key {key}.methods[{index}] = {method!r}: semi-Siamese methods apply to "
                              f"bi-encoders only; remove monobert from {key}.rankers or the method")
        if METHODS[method].builder == "ss_prefix" and config["methods"]["prefix"]["kind"] != "hidden":
            raise ConfigError(f"config key methods.prefix.kind = {config['methods']['prefix']['kind']!r}: "
                              f"{method} in {key} needs hidden-state prefixes (allowed: hidden)")


def _check_best_of(config: dict, table: str, spec: dict) -> None:
    key, source = f"tables.{table}", spec.get("best_of")
    if source not in config["tables"] or source == table:
        raise ConfigError(f"config key {key}.best_of = {source!r}: the lft_best row needs another table, "
                          f"allowed: {', '.join(t for t in config['tables'] if t != table)}")
    missing = [r for r in spec["rankers"] if r not in config["tables"][source]["rankers"]]
    if missing:
        raise ConfigError(f"config key {key}.best_of = {source!r}: tables.{source} has no rows for {missing}")


def _check_metrics(config: dict) -> None:
    """Every metric name is an ir_measures measure a provider here computes (``peftir.contract.measures.measure``)."""
    named = [(f"experiment.metrics[{i}]", m) for i, m in enumerate(config["experiment"]["metrics"])]
    named += [(f"datasets.{d}.validation_metric", spec["validation_metric"]) for d, spec in config["datasets"].items()]
    named += [(f"figures.{f}.metric", spec["metric"]) for f, spec in config["figures"].items()]
    for key, name in named:
        try:
            measure(name)
        except ValueError as problem:
            raise ConfigError(f"config key {key} = {name!r}: {problem}") from None
