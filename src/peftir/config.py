"""Checking a workflow configuration before any job runs.

jsonschema's own errors are long and name schema paths; users need one line
naming the config key and what it may be. Cross-references the schema cannot
express (an experiment dataset must be configured) are checked here too.
"""
from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


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
    for table, spec in config["tables"].items():
        for index, ranker in enumerate(spec["rankers"]):
            if ranker not in config["labels"]["rankers"]:
                raise ConfigError(f"config key labels.rankers: no label for {ranker!r} used in tables.{table}")
    for method in config["experiment"]["methods"]:
        if method not in config["labels"]["methods"]:
            raise ConfigError(f"config key labels.methods: no label for method {method!r}")


# Methods built from others take those methods' settings (one place to change a LoRA rank).
COMPONENTS: dict[str, tuple[str, ...]] = {"prefix_lora": ("prefix", "lora")}


def settings_for(method: str, configured: dict) -> dict:
    """The settings a method's jobs get: its own entry, or its components' entries."""
    if method in COMPONENTS:
        return {part: configured[part] for part in COMPONENTS[method]}
    return configured[method]
