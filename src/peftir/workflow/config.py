"""Checking a workflow configuration before any job runs.

jsonschema's own errors are long and name schema paths; users need one line naming the config key,
its value and what it may be. The schema admits no unknown key anywhere and, unlike JSON Schema's
own "integer", no float where an integer is meant (``2.0`` epochs is a typo, not a count). What the
schema cannot express is checked here too: cross-references between sections, the ir_datasets ids and
fields a dataset names, the folds file, and last the relations between keys (``peftir.workflow.relations``:
lengths that fit in one another, depths within the rankings they read, schedules within their runs).
"""
from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from ..data.export import DEFAULT_TEXT
from ..data.folds import read_folds, rotation
from ..data.trec import MalformedFileError
from ..data.translations import query_lines, read_translations, untranslated
from ..layout import BEST_OF, METHODS, RANKERS, TRANSLATIONS, collection_languages, measure, pretrained_run
from ..rankers import pretrained
from . import relations
from .plan import CLIR_FOLD

SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"    # relative to the checkout


class ConfigError(ValueError):
    """A configuration problem, stated as one line: key, value, what is allowed."""


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
    return error.message


def _best(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf failures, the deepest sub-error explains more than 'not valid under any'."""
    return jsonschema.exceptions.best_match([error]) if error.context else error


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


def validate(config: dict, schema_path: str | Path) -> None:
    """Raise ConfigError naming the first problem; also checks cross-references between sections."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    errors = sorted(_Validator(schema).iter_errors(config),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.path))))
    if errors:
        raise _schema_error(errors[0])
    _check_metrics(config)
    for index, name in enumerate(config["experiment"]["datasets"]):
        if name not in config["datasets"]:
            raise ConfigError(f"config key experiment.datasets[{index}] = {name!r}: "
                              f"allowed: {', '.join(config['datasets'])} (the keys of `datasets`)")
    for index, name in enumerate(config["experiment"]["references"]):
        if name not in config["labels"]["references"]:
            raise ConfigError(f"config key labels.references: no label for {name!r} (experiment.references[{index}])")
    _check_backbone(config["backbone"])
    for name, spec in config["datasets"].items():
        _check_dataset(name, spec)
    for kind in ("tables", "figures"):
        for name, spec in config[kind].items():
            _check_layout(config, kind, name, spec)
    if config.get("modular_clir"):
        _check_modular_clir(config)
    _check_dense(config)
    try:
        relations.check(config)
    except relations.RelationError as problem:
        raise ConfigError(str(problem)) from None


def _check_dense(config: dict) -> None:
    """Pretraining runs, dense and SPLADE retrievers (``peftir.workflow.dense_config``, ``sparse_config``), and
    every backbone named ``pretrained:<run>`` names a run."""
    from . import dense_config, sparse_config

    try:
        dense_config.check_backbone_name(config, config["backbone"]["name"], "backbone.name")
        if config.get("modular_clir"):
            dense_config.check_backbone_name(config, config["modular_clir"]["backbone"]["name"],
                                             "modular_clir.backbone.name")
        if config.get("pretraining"):
            dense_config.check_pretraining(config)
        if config.get("dense_retrieval"):
            dense_config.check_dense_retrieval(config)
        if config.get("sparse_retrieval"):
            sparse_config.check_sparse_retrieval(config)
    except dense_config.DenseConfigError as problem:
        raise ConfigError(str(problem)) from None


def _check_modular_clir(config: dict) -> None:
    """What the modular CLIR section names exists in it: packages, languages, the ranking dataset, labels; each
    corpus part has what its kind reads; an ir_datasets collection's ids and fields exist (offline registry)."""
    clir, key = config["modular_clir"], "modular_clir"
    languages, packages = clir["languages"], clir["packages"]

    def known(value: str, allowed, where: str, what: str) -> None:
        if value not in allowed:
            raise ConfigError(f"config key {key}.{where} = {value!r}: allowed: {', '.join(allowed)} ({what})")

    def corpus_part(where: str, part: dict) -> None:
        """A text part reads its file, the other kinds a package (a Bible also its module)."""
        if part["kind"] == "text":
            if "path" not in part or "package" in part:
                raise ConfigError(f"config key {key}.{where}: a text part names its file (path) and no package")
            return
        if "package" not in part:
            raise ConfigError(f"config key {key}.{where}: a {part['kind']} part names its package (a key of "
                              f"{key}.packages)")
        known(part["package"], packages, f"{where}.package", f"the keys of {key}.packages")
        if part["kind"] == "sword" and "module" not in part:
            raise ConfigError(f"config key {key}.{where}: a sword part names its Bible (module, e.g. engWEB2015eb)")

    def irds_language(language: str, spec: dict) -> None:
        """The id exists and its queries (and documents) have the fields named; read without downloading."""
        import ir_datasets

        where = f"collection.languages.{language}"
        if "irds" not in spec or "query_field" not in spec:
            raise ConfigError(f"config key {key}.{where}: source ir_datasets names the dataset (irds) and the "
                              f"queries' field (query_field) of every language")
        if spec["irds"] not in ir_datasets.registry:
            raise ConfigError(f"config key {key}.{where}.irds = {spec['irds']!r}: not an ir_datasets id "
                              f"(see https://ir-datasets.com)")
        dataset = ir_datasets.load(spec["irds"])
        if not (dataset.has_queries() and dataset.has_qrels()):
            raise ConfigError(f"config key {key}.{where}.irds = {spec['irds']!r}: has no queries and qrels")
        known(spec["query_field"], _text_fields(dataset.queries_cls()), f"{where}.query_field",
              f"text fields of {spec['irds']}'s queries")
        docs = _text_fields(dataset.docs_cls()) if dataset.has_docs() else []
        for index, field in enumerate(spec.get("doc_fields", [])):
            known(field, docs, f"{where}.doc_fields[{index}]", f"text fields of {spec['irds']}'s documents")

    known(clir["source_language"], languages, "source_language", f"the keys of {key}.languages")
    known(clir["ranking"]["dataset"], config["datasets"], "ranking.dataset", "the keys of `datasets`")
    for language, spec in languages.items():
        for index, part in enumerate(spec["corpus"]):
            corpus_part(f"languages.{language}.corpus[{index}]", part)
    collection = clir["collection"]
    if collection["source"] == "debian-reference":
        missing = [k for k in ("packages", "query_field", "test_queries", "valid_queries", "seed") if k not in collection]
        if missing:
            raise ConfigError(f"config key {key}.collection: source debian-reference needs {', '.join(missing)}")
        for language, package in collection["packages"].items():
            known(language, languages, f"collection.packages.{language}", f"the keys of {key}.languages")
            known(package, packages, f"collection.packages.{language}", f"the keys of {key}.packages")
    query_languages = collection_languages(config)
    document_languages = query_languages
    if collection["source"] == "ir_datasets":
        given = collection.get("languages", {})
        for language, spec in given.items():
            known(language, languages, f"collection.languages.{language}", f"the keys of {key}.languages")
            irds_language(language, spec)
        document_languages = [language for language in query_languages if "doc_fields" in given.get(language, {})]
    for kind in ("tables", "figures"):
        for name, spec in clir[kind].items():
            for index, pair in enumerate(spec["pairs"]):
                query, doc = pair.split("-")
                known(query, query_languages, f"{kind}.{name}.pairs[{index}]", "languages of the test collection")
                known(doc, document_languages, f"{kind}.{name}.pairs[{index}]",
                      "languages with documents in the test collection")
            for system in spec["systems"]:
                known(system, clir["labels"]["systems"], f"{kind}.{name}.systems", f"{key}.labels.systems")
            known(spec["prerank"], clir["labels"]["prerank"], f"{kind}.{name}.prerank", f"{key}.labels.prerank")
            if kind == "tables" and "reduction_factors" in spec:
                raise ConfigError(f"config key {key}.tables.{name}.reduction_factors: tables use "
                                  f"{key}.ranking.reduction_factors (only figures vary them)")
            if kind == "figures" and "nmt_bm25" in spec:
                raise ConfigError(f"config key {key}.figures.{name}.nmt_bm25: only tables have an NMT + BM25 row")
    _check_translations(clir)
    try:
        measure(clir["metric"])
    except ValueError as problem:
        raise ConfigError(f"config key {key}.metric = {clir['metric']!r}: {problem}") from None


def _check_translations(clir: dict) -> None:
    """Each file of ``modular_clir.translations``, before any job: its pair is shown by a table's NMT + BM25 row, the
    file is there and well formed (a bad line named by file and line) and, where the test queries are known before
    any job (a collection given as files), translates every one (a missing one named by its queries file's line);
    otherwise the ``nmt_bm25_clir`` job checks that before it searches."""
    shown = {pair for spec in clir["tables"].values() if "nmt_bm25" in spec for pair in spec["pairs"]}
    for pair, path in clir["translations"].items():
        where = f"config key {TRANSLATIONS}.{pair} = {path!r}"
        if pair not in shown:
            raise ConfigError(f"{where}: no table with an NMT + BM25 row (nmt_bm25) shows pair {pair}")
        if not Path(path).is_file():
            raise ConfigError(f"{where}: no such file (the pair's test queries translated into the documents' "
                              f"language: query id<TAB>text, one a line)")
        try:
            found = read_translations(path)
        except MalformedFileError as problem:
            raise ConfigError(f"{where}: {problem}") from None
        known = _local_test_queries(clir["collection"], pair.split("-")[0])
        problem = untranslated(found, path, *known) if known else None
        if problem:
            raise ConfigError(f"{where}: {problem}")


def _local_test_queries(collection: dict, language: str) -> tuple[Path, list[str]] | None:
    """A collection given as files: the query language's queries file and its test queries (the test split of the
    folds.json given with it, else every query, as ``clir_collection.copy_local_collection`` reads them); None
    where a job makes the collection, or the copy is not there yet (that job then names what is missing)."""
    root = Path(collection.get("path") or "")
    queries, folds = root / language / "queries.tsv", root / "folds.json"
    if collection["source"] != "files" or not queries.is_file():
        return None
    return queries, (rotation(read_folds(folds), CLIR_FOLD)["test"] if folds.is_file() else list(query_lines(queries)))


def _check_backbone(backbone: dict) -> None:
    """A local backbone must exist (its depth bounds ``layers``: ``peftir.workflow.relations``)."""
    name = backbone["name"]
    if pretrained_run(name):
        return                  # made by a pretraining run (its name checked by ``_check_dense``)
    if pretrained.looks_local(name) and not Path(name).expanduser().is_dir():
        raise ConfigError(f"config key backbone.name = {name!r}: no such directory (a local model directory, "
                          f"a Hugging Face hub name or {pretrained.EMBEDDED})")


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
    queries = _text_fields(asked.queries_cls()) if asked.has_queries() else []
    if spec["query_field"] not in queries:
        raise ConfigError(f"config key {key}.query_field = {spec['query_field']!r}: allowed: "
                          f"{', '.join(queries)} (text fields of {source}'s queries)")
    docs = _text_fields(dataset.docs_cls()) if dataset.has_docs() else []
    for index, field in enumerate(spec["doc_fields"]):
        if field not in docs:
            raise ConfigError(f"config key {key}.doc_fields[{index}] = {field!r}: allowed: "
                              f"{', '.join(docs)} (text fields of {spec['irds']}'s documents)")
    if "path" in spec["folds"]:
        _check_folds_file(f"{key}.folds", spec["folds"])
    _check_train_pairs(key, spec)


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


def _text_fields(record_class: type) -> list[str]:
    """A record type's text fields (not ids, not bytes such as a WARC body) and, where ir_datasets gives
    one, ``default_text`` (its text of the record: for web pages, the parsed HTML's title and body)."""
    types = getattr(record_class, "__annotations__", {})
    names = [name for name in record_class._fields if not name.endswith("_id") and types.get(name, str) is str]
    return names + [DEFAULT_TEXT] * hasattr(record_class, DEFAULT_TEXT)


def _check_folds_file(key: str, folds: dict) -> None:
    from ..data.folds import read_folds_file

    try:
        groups = read_folds_file(folds["path"])
    except ValueError as problem:
        raise ConfigError(f"config key {key}.path = {folds['path']!r}: {problem}") from None
    if "folds" in groups and "n" in folds and len(groups["folds"]) != folds["n"]:
        raise ConfigError(f"config key {key}.n = {folds['n']}: the file {folds['path']} has "
                          f"{len(groups['folds'])} folds")


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
