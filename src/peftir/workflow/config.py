"""Checking a workflow configuration before any job runs.

jsonschema's own errors are long and name schema paths; users need one line
naming the config key and what it may be. Cross-references the schema cannot
express (an experiment dataset must be configured) are checked here too.
"""
from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import yaml

from ..layout import BEST_OF, METHODS, NAME, RANKERS, measure

SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"    # relative to the checkout


class ConfigError(ValueError):
    """A configuration problem, stated as one line: key, value, what is allowed."""


def _key(path) -> str:
    key = ""
    for part in path:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key or "(top level)"


def _allowed(error: jsonschema.ValidationError) -> str:
    """What the failing schema keyword allows, in words."""
    schema, keyword = error.schema, error.validator
    if keyword == "enum":
        return "allowed: " + ", ".join(map(str, schema["enum"]))
    if keyword == "type":
        return f"expected type: {schema['type']}"
    if keyword == "required":
        return "required keys: " + ", ".join(schema["required"])
    if keyword == "additionalProperties" and "properties" in schema:
        return "allowed keys: " + ", ".join(schema["properties"])
    if keyword == "contains" and "description" in schema:
        return schema["description"]
    return error.message


def _best(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf failures, the deepest sub-error explains more than 'not valid under any'."""
    return jsonschema.exceptions.best_match([error]) if error.context else error


def validate(config: dict, schema_path: str | Path) -> None:
    """Raise ConfigError naming the first problem; also checks cross-references between sections."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.path))))
    if errors:
        error = _best(errors[0])
        value = "" if error.validator in ("required", "additionalProperties") else f" = {error.instance!r}"
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            value = f": unknown key(s) {', '.join(extra)}"
        raise ConfigError(f"config key {_key(error.absolute_path)}{value}: {_allowed(error)}")
    for section in ("datasets", "tables", "figures"):
        for name in config[section]:
            if not re.fullmatch(NAME, name):
                raise ConfigError(f"config key {section}.{name}: names are letters, digits, '_', '.', '-' "
                                  f"and start with a letter or digit (they become file names under results/)")
    _check_metrics(config)
    for index, name in enumerate(config["experiment"]["datasets"]):
        if name not in config["datasets"]:
            raise ConfigError(f"config key experiment.datasets[{index}] = {name!r}: "
                              f"allowed: {', '.join(config['datasets'])} (the keys of `datasets`)")
    for kind in ("tables", "figures"):
        for name, spec in config[kind].items():
            _check_layout(config, kind, name, spec)
    if config["methods"]["ss_prefix"]["common_length"] >= config["methods"]["prefix"]["length"]:
        raise ConfigError("config key methods.ss_prefix.common_length: must be below methods.prefix.length "
                          "(the concat variant keeps the rest of the positions common)")


def _check_layout(config: dict, kind: str, name: str, spec: dict) -> None:
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
    """Every metric name is an ir_measures measure a provider here computes (``peftir.layout.measure``)."""
    named = [(f"experiment.metrics[{i}]", m) for i, m in enumerate(config["experiment"]["metrics"])]
    named += [(f"datasets.{d}.validation_metric", spec["validation_metric"]) for d, spec in config["datasets"].items()]
    named += [(f"figures.{f}.metric", spec["metric"]) for f, spec in config["figures"].items()]
    for key, name in named:
        try:
            measure(name)
        except ValueError as problem:
            raise ConfigError(f"config key {key} = {name!r}: {problem}") from None


def load_config(checkout: str | Path, configfiles: list[str]) -> dict:
    """The configuration a run had: the checkout's config.yaml with the run's --configfile overlays merged
    over it in order, as Snakemake merges them; validated."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in [Path(checkout) / "config.yaml", *configfiles]:
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    validate(config, Path(checkout) / SCHEMA)
    return config
