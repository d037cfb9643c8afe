"""Checking a workflow configuration before any job runs.

jsonschema's own errors are long and name schema paths; users need one line
naming the config key and what it may be. Cross-references the schema cannot
express (an experiment dataset must be configured) are checked here too.
"""
from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from .catalogue import BEST_OF, CATALOGUE


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
    if keyword == "pattern":
        return "allowed forms: P@k, nDCG@k, MAP, MRR@k, R@k"
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
        if CATALOGUE[method].bi_encoder_only and "monobert" in spec["rankers"]:
            raise ConfigError(f"config key {key}.methods[{index}] = {method!r}: semi-Siamese methods apply to "
                              f"bi-encoders only; remove monobert from {key}.rankers or the method")
        if CATALOGUE[method].builder == "ss_prefix" and config["methods"]["prefix"]["kind"] != "hidden":
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
