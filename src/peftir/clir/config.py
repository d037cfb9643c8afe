"""Checks of the ``modular_clir`` section that the schema cannot express: what it names exists (packages, languages,
the ranking dataset, labels), each corpus part has what its kind reads, an ir_datasets collection's ids and fields
exist, the user's translations are there and complete (sizes and depths: ``peftir.clir.relations``). Called by
``peftir.pipeline.config.validate`` before any job runs."""
from __future__ import annotations

from pathlib import Path

from ..contract.backbones import EMBEDDED, EMBEDDED_MULTILINGUAL
from ..contract.checks import ConfigError, check_backbone_name, known, text_fields
from ..contract.measures import measure
from ..data.folds import read_folds, rotation
from ..data.trec import MalformedFileError
from .contract import CLIR_FOLD, TRANSLATED_PRERANK, TRANSLATIONS, collection_languages
from .translations import query_lines, read_translations, untranslated


def check_modular_clir(config: dict) -> None:
    """What the modular CLIR section names exists in it: packages, languages, the ranking dataset, labels; each
    corpus part has what its kind reads; an ir_datasets collection's ids and fields exist (offline registry); its
    backbone and dense pre-ranker are models it can load (the embedded multilingual one among them)."""
    _check_sections(config)
    for key, name in (("modular_clir.backbone.name", config["modular_clir"]["backbone"]["name"]),
                      ("modular_clir.prerank.dense.model", config["modular_clir"]["prerank"]["dense"]["model"])):
        check_backbone_name(config, name, key, (EMBEDDED, EMBEDDED_MULTILINGUAL))


def _check_sections(config: dict) -> None:
    clir, key = config["modular_clir"], "modular_clir"
    languages, packages = clir["languages"], clir["packages"]

    def corpus_part(where: str, part: dict) -> None:
        """A text part reads its file, the other kinds a package (a Bible also its module)."""
        if part["kind"] == "text":
            if "path" not in part or "package" in part:
                raise ConfigError(f"config key {key}.{where}: a text part names its file (path) and no package")
            return
        if "package" not in part:
            raise ConfigError(f"config key {key}.{where}: a {part['kind']} part names its package (a key of "
                              f"{key}.packages)")
        known(part["package"], packages, f"{key}.{where}.package", f"the keys of {key}.packages")
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
        known(spec["query_field"], text_fields(dataset.queries_cls()), f"{key}.{where}.query_field",
              f"text fields of {spec['irds']}'s queries")
        docs = text_fields(dataset.docs_cls()) if dataset.has_docs() else []
        for index, field in enumerate(spec.get("doc_fields", [])):
            known(field, docs, f"{key}.{where}.doc_fields[{index}]", f"text fields of {spec['irds']}'s documents")

    known(clir["source_language"], languages, f"{key}.source_language", f"the keys of {key}.languages")
    known(clir["ranking"]["dataset"], config["datasets"], f"{key}.ranking.dataset", "the keys of `datasets`")
    for language, spec in languages.items():
        for index, part in enumerate(spec["corpus"]):
            corpus_part(f"languages.{language}.corpus[{index}]", part)
    collection = clir["collection"]
    if collection["source"] == "debian-reference":
        missing = [k for k in ("packages", "query_field", "test_queries", "valid_queries", "seed") if k not in collection]
        if missing:
            raise ConfigError(f"config key {key}.collection: source debian-reference needs {', '.join(missing)}")
        for language, package in collection["packages"].items():
            known(language, languages, f"{key}.collection.packages.{language}", f"the keys of {key}.languages")
            known(package, packages, f"{key}.collection.packages.{language}", f"the keys of {key}.packages")
    query_languages = collection_languages(config)
    document_languages = query_languages
    if collection["source"] == "ir_datasets":
        given = collection.get("languages", {})
        for language, spec in given.items():
            known(language, languages, f"{key}.collection.languages.{language}", f"the keys of {key}.languages")
            irds_language(language, spec)
        document_languages = [language for language in query_languages if "doc_fields" in given.get(language, {})]
    for kind in ("tables", "figures"):
        for name, spec in clir[kind].items():
            for index, pair in enumerate(spec["pairs"]):
                query, doc = pair.split("-")
                known(query, query_languages, f"{key}.{kind}.{name}.pairs[{index}]",
                      "languages of the test collection")
                known(doc, document_languages, f"{key}.{kind}.{name}.pairs[{index}]",
                      "languages with documents in the test collection")
            for system in spec["systems"]:
                known(system, clir["labels"]["systems"], f"{key}.{kind}.{name}.systems", f"{key}.labels.systems")
            known(spec["prerank"], clir["labels"]["prerank"], f"{key}.{kind}.{name}.prerank",
                  f"{key}.labels.prerank")
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
    """Each file of ``modular_clir.translations``, before any job: its pair is shown by a table's NMT + BM25 row or
    pre-ranker (a table or figure whose pre-ranker is NMT + BM25 has one for each of its pairs), the
    file is there and well formed (a bad line named by file and line) and, where the test queries are known before
    any job (a collection given as files), translates every one (a missing one named by its queries file's line);
    otherwise the ``nmt_bm25_clir`` job checks that before it searches."""
    translated = [(f"modular_clir.{kind}.{name}", spec) for kind in ("tables", "figures")
                  for name, spec in clir[kind].items() if spec["prerank"] == TRANSLATED_PRERANK]
    for key, spec in translated:
        for pair in spec["pairs"]:
            if pair not in clir["translations"]:
                raise ConfigError(f"config key {key}.prerank = {TRANSLATED_PRERANK!r}: no translations of pair "
                                  f"{pair}'s queries ({TRANSLATIONS}.{pair}: a file of query id<TAB>text in the "
                                  f"documents' language); NMT + BM25 and its rerankers read them")
    shown = {pair for spec in clir["tables"].values() if "nmt_bm25" in spec for pair in spec["pairs"]}
    shown |= {pair for _, spec in translated for pair in spec["pairs"]}
    for pair, path in clir["translations"].items():
        where = f"config key {TRANSLATIONS}.{pair} = {path!r}"
        if pair not in shown:
            raise ConfigError(f"{where}: no table with an NMT + BM25 row (nmt_bm25) or pre-ranker shows pair "
                              f"{pair}")
        if not Path(path).is_file():
            raise ConfigError(f"{where}: no such file (the pair's test queries translated into the documents' "
                              f"language: query id<TAB>text, one a line)")
        try:
            found = read_translations(path)
        except MalformedFileError as problem:
            raise ConfigError(f"{where}: {problem}") from None
        local = _local_test_queries(clir["collection"], pair.split("-")[0])
        problem = untranslated(found, path, *local) if local else None
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
