"""Checking a workflow configuration before any job runs.

jsonschema's own errors are long and name schema paths; users need one line naming the config key,
its value and what it may be. The schema admits no unknown key anywhere and, unlike JSON Schema's
own "integer", no float where an integer is meant (``2.0`` epochs is a typo, not a count). What the
schema cannot express is checked next: the datasets every system shares here (the ir_datasets ids and fields a
dataset names, the folds file), then each section a registered system owns by its own checker (``peftir.systems``:
its ``checks``; what the section names exists), and last the relations between keys (``peftir.pipeline.relations``:
lengths that fit in one another, depths within the rankings they read, schedules within their runs), of the
collections some job of the config reads (``peftir.pipeline.plan.built_datasets``): their sizes come from
ir_datasets' metadata, which a collection defined and not used does not have read.
"""
from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from ..contract.checks import ConfigError, text_fields
from ..provenance.code_version import shipped_path
from ..systems import RegistryError, System, registered
from . import relations
from .plan import built_datasets

SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"    # relative to the checkout
FRAGMENT = ("required", "resources", "per_dataset", "$defs", "properties")     # what a system's schema fragment holds


# JSON Schema counts 2.0 as an integer; a count given as a float is a mistake worth naming.
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)))


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
        missing = [key for key in schema["required"] if key not in error.instance]
        why = f" ({schema['description']})" if "description" in schema else ""
        return f"missing key(s) {', '.join(missing)}; required keys: {', '.join(schema['required'])}{why}"
    if keyword == "additionalProperties" and "properties" in schema:
        return "allowed keys: " + ", ".join(schema["properties"])
    if keyword in ("contains", "pattern", "minimum", "maximum", "maxItems") and "description" in schema:
        return schema["description"]
    if keyword == "oneOf" and "allowed" in schema:
        return f"allowed: {schema['allowed']}"
    return error.message


def _best(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf failures, the deepest sub-error explains more than 'not valid under any', unless the schema
    says in words what it allows (``allowed``: "auto, or a positive integer")."""
    return jsonschema.exceptions.best_match([error]) if error.context and "allowed" not in error.schema else error


def _schema_error(error: jsonschema.ValidationError) -> ConfigError:
    error = _best(error)
    key = _key(error.absolute_path)
    if "propertyNames" in error.schema_path:   # a key itself is wrong: name it, not its parent
        return ConfigError(f"config key {key}.{error.instance}: {_allowed(error)}")
    value = "" if error.validator in ("required", "additionalProperties") else f" = {error.instance!r}"
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        value = f": unknown key(s) {', '.join(extra)}"
    return ConfigError(f"config key {key}{value}: {_allowed(error)}")


def joined_schema(schema_path: str | Path, checkout: str | Path) -> dict:
    """The whole config schema: the shared sections' (``schema_path``) with each registered system's fragment
    (``peftir.systems.System.schema``) joined in: its sections (``properties``, ``required``), its definitions
    (``$defs``), and its rules' entries in ``resources`` (all required where the config has one of its sections: an
    installed system the config does not use asks nothing of it) and in a dataset's ``resources`` overrides
    (``per_dataset``). A fragment's unknown key, and a section, definition or rule two of them define, are refused,
    naming both."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    resources = schema["properties"]["resources"]
    overrides = schema["properties"]["datasets"]["additionalProperties"]["properties"]["resources"]["properties"]
    owner = {**{f"{part} {name}": "the shared schema" for part in ("$defs", "properties") for name in schema[part]},
             **{f"resources {rule}": "the shared schema" for rule in resources["properties"]}}
    for system in registered():
        if not system.schema:
            continue
        path = system.schema_file(checkout)
        fragment = yaml.safe_load(Path(path).read_text())
        unknown = sorted(set(fragment) - set(FRAGMENT))
        if unknown:
            raise RegistryError(f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(FRAGMENT)}")
        named = [f"{part} {name}" for part in ("$defs", "properties") for name in fragment.get(part, {})]
        for key in named + [f"resources {rule}" for rule in fragment.get("resources", [])]:
            if key in owner:
                raise RegistryError(f"{path}: {key} is defined by {owner[key]} already")
            owner[key] = f"system {system.name}"
        for part in ("$defs", "properties"):
            schema[part].update(fragment.get(part, {}))
        schema["required"] += fragment.get("required", [])
        schema.setdefault("allOf", []).append(_resources_when_in_run(system, fragment.get("resources", [])))
        resources["properties"].update({rule: {"$ref": "#/$defs/resources"} for rule in fragment.get("resources", [])})
        outside = sorted(set(fragment.get("per_dataset", [])) - set(fragment.get("resources", [])))
        if outside:
            raise RegistryError(f"{path}: per_dataset names rules that are not among its resources: "
                                f"{', '.join(outside)}")
        overrides.update({rule: {"$ref": "#/$defs/resource_overrides"} for rule in fragment.get("per_dataset", [])})
    return schema


def _resources_when_in_run(system: System, rules: list[str]) -> dict:
    """The schema's condition that a config with one of ``system``'s sections (``System.in_run``) gives its
    ``rules`` their ``resources`` entries."""
    sections = [section for section, _ in system.checks]
    given = [{"required": [section], "properties": {section: {"type": "object", "minProperties": 1}}}
             for section in sections]         # as ``in_run`` reads it: a null or empty section is no section
    return {"if": {"anyOf": given},
            "then": {"properties": {"resources": {
                "required": rules, "description": f"the rules of {system.name}, whose section "
                                                  f"{' or '.join(sections)} the config has"}}}}


def validate(config: dict, schema_path: str | Path, checkout: str | Path | None = None,
             configfiles: list[str] | None = None) -> None:
    """Raise ConfigError naming the first problem; also checks cross-references between sections. ``checkout``: the
    workflow's (where its shipped files are; by default the one the schema is in); ``configfiles``: the files the
    run gave, in order, where known (an overlay that stacks on others needs them given too)."""
    checkout = Path(checkout) if checkout else Path(schema_path).resolve().parents[2]
    if configfiles is not None:
        _check_stacking(config, checkout, configfiles)
    schema = joined_schema(schema_path, checkout)
    errors = sorted(_Validator(schema).iter_errors(config),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.path))))
    if errors:
        raise _schema_error(errors[0])
    for name, spec in config["datasets"].items():
        _check_dataset(name, spec)
    for system in registered():
        for section, check in system.checks:
            if config.get(section):
                check(config)
    _check_reproduction(config, checkout)
    relations.check(config, built_datasets(config))     # sizes read of the collections some job reads


def _check_stacking(config: dict, checkout: Path, configfiles: list[str]) -> None:
    """Each file ``stacks_on`` names was given: an overlay meant to go on top of another (one collection's on its
    paper's configuration) is otherwise refused by whatever of the other's it lacks, a message that does not say why."""
    given = {Path(path).resolve() for path in configfiles}
    for index, needed in enumerate(config.get("stacks_on") or []):
        if (checkout / needed).resolve() not in given:
            overlays = " ".join(str(path) for path in configfiles)
            raise ConfigError(f"config key stacks_on[{index}] = {needed!r}: this configuration is an overlay of "
                              f"{needed}, which was not given; give it before the overlay (--configfile "
                              f"config.yaml {needed} … in that order; given: {overlays})")


def _check_reproduction(config: dict, checkout: Path) -> None:
    """Each built table's paper has a readable reported file (``reproduction.reported``/<paper>.yaml, in the
    workflow's ``checkout``), a stand-in is a dataset of ``datasets``, and the original runs given are for tables
    the config builds, with their files there."""
    from ..reports.reported import ReportedError, load_reported
    from .plan import reported_files, table_reports

    section = config["reproduction"]
    tables = table_reports(config)
    for name in reported_files(config):
        path = shipped_path(name, checkout)
        if not path.is_file() and ":" in name:
            raise ConfigError(f"{name} ({path}): no such reported file, which the installed system of its tables "
                              f"names (what the paper printed, <paper>.yaml): reinstall that system's package")
        if not path.is_file():
            raise ConfigError(f"config key reproduction.reported = {section['reported']!r}: no {path.name} "
                              f"there (what the paper printed, <paper>.yaml; relative to the workflow's checkout)")
        try:
            load_reported(path)
        except ReportedError as problem:
            raise ConfigError(f"config key reproduction.reported: {problem}") from None
    for paper_dataset, built in section["stand_ins"].items():
        if built not in config["datasets"]:
            raise ConfigError(f"config key reproduction.stand_ins.{paper_dataset} = {built!r}: allowed: "
                              f"{', '.join(config['datasets'])} (the keys of datasets)")
    for report, given in section["original_runs"].items():
        if report not in tables:
            raise ConfigError(f"config key reproduction.original_runs.{report}: allowed: {', '.join(tables)} "
                              f"(the tables the config builds)")
        for key, path in [("qrels", given["qrels"]), *((f"rows.{row}", run) for row, run in given["rows"].items())]:
            if not Path(path).is_file():
                raise ConfigError(f"config key reproduction.original_runs.{report}.{key} = {path!r}: no such file")


def _check_dataset(name: str, spec: dict) -> None:
    """The ir_datasets ids it names exist and have the fields it reads; a folds file is readable."""
    import ir_datasets  # 0.3 s; it reads IR_DATASETS_HOME now, which the jobs inherit unchanged

    key = f"datasets.{name}"
    ids = [(f"{key}.irds", spec["irds"])]
    ids += [(f"{key}.splits.{split}", irds_id) for split, irds_id in spec.get("splits", {}).items()]
    ids += [(f"{key}.topics[{i}]", irds_id) for i, irds_id in enumerate(spec.get("topics", []))]
    ids += [(f"{key}.folds.irds[{i}]", irds_id) for i, irds_id in enumerate(spec["folds"].get("irds", []))]
    for id_key, irds_id in ids:
        if irds_id not in ir_datasets.registry:
            raise ConfigError(f"config key {id_key} = {irds_id!r}: not an ir_datasets id "
                              f"(see https://ir-datasets.com)")
    dataset = ir_datasets.load(spec["irds"])
    source = next(iter(spec["splits"].values())) if "splits" in spec else (spec.get("topics") or [spec["irds"]])[0]
    asked = ir_datasets.load(source)                                   # where the queries come from
    queries = text_fields(asked.queries_cls()) if asked.has_queries() else []
    if spec["query_field"] not in queries:
        raise ConfigError(f"config key {key}.query_field = {spec['query_field']!r}: allowed: "
                          f"{', '.join(queries)} (text fields of {source}'s queries)")
    docs = text_fields(dataset.docs_cls()) if dataset.has_docs() else []
    for index, field in enumerate(spec["doc_fields"]):
        if field not in docs:
            raise ConfigError(f"config key {key}.doc_fields[{index}] = {field!r}: allowed: "
                              f"{', '.join(docs)} (text fields of {spec['irds']}'s documents)")
    if "path" in spec["folds"]:
        _check_folds_file(f"{key}.folds", spec["folds"])
    _check_train_pairs(key, spec)
    _check_answers(key, spec)


def _check_answers(key: str, spec: dict) -> None:
    """Runs judged by answer matching need questions that carry their answers (ir_datasets' dpr-w100 splits)."""
    import ir_datasets

    if not spec.get("answers"):
        return
    for source in list((spec.get("splits") or {}).values()) or list(spec.get("topics") or [spec["irds"]]):
        fields = ir_datasets.load(source).queries_cls()._fields
        if "answers" not in fields:
            raise ConfigError(f"config key {key}.answers = {spec['answers']!r}: {source}'s queries have no answers "
                              f"(fields: {', '.join(fields)}); answer matching needs questions with answers, such as "
                              f"dpr-w100/natural-questions/dev")


def _check_train_pairs(key: str, spec: dict) -> None:
    """Fixed training triples come from a pre-assigned training split that has them in ir_datasets."""
    import ir_datasets

    source = spec.get("train_pairs", {}).get("source", "bm25")
    if source == "bm25":
        return
    if "train" not in spec.get("splits", {}):
        raise ConfigError(f"config key {key}.train_pairs.source = {source!r}: needs a pre-assigned training split "
                          f"({key}.splits with folds.scheme presplit); cross-validation folds train with bm25")
    train = spec["splits"]["train"]
    has = {"docpairs": "has_docpairs", "doctriples": "has_scoreddocs"}[source]
    if not getattr(ir_datasets.load(train), has)():
        what = "triples (docpairs)" if source == "docpairs" else "an official ranking (scoreddocs) to draw from"
        raise ConfigError(f"config key {key}.train_pairs.source = {source!r}: {train} has no {what}")


def _check_folds_file(key: str, folds: dict) -> None:
    from ..data.folds import read_folds_file

    try:
        groups = read_folds_file(folds["path"])
    except ValueError as problem:
        raise ConfigError(f"config key {key}.path = {folds['path']!r}: {problem}") from None
    if "folds" in groups and "n" in folds and len(groups["folds"]) != folds["n"]:
        raise ConfigError(f"config key {key}.n = {folds['n']}: the file {folds['path']} has "
                          f"{len(groups['folds'])} folds")


def load_config(checkout: str | Path, configfiles: list[str]) -> dict:
    """The configuration a run had: the checkout's config.yaml with the run's --configfile overlays merged
    over it in order, as Snakemake merges them; validated."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in [Path(checkout) / "config.yaml", *configfiles]:
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    validate(config, Path(checkout) / SCHEMA, checkout, [str(Path(checkout) / "config.yaml"), *map(str, configfiles)])
    return config
