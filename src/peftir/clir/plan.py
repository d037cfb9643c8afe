"""Planning the modular CLIR system's jobs from the config alone: which packages, corpora, modules and runs each
job reads, and the files each table and figure reads."""
from __future__ import annotations

from typing import Any, Mapping

from ..contract.backbones import EMBEDDED_MULTILINGUAL
from ..contract.inputs import backbone_input
from ..contract.paths import CORE
from .contract import (CLIR_FOLD, CLIR_PAPER, CLIR_SYSTEMS, PATHS, TRANSLATED_PRERANK, clir_cell_ids,
                       clir_report_layout, collection_languages, composed_languages, pair_languages, ranking_key,
                       ranking_of)

Config = Mapping[str, Any]


def datasets(config: Config) -> list[str]:
    """The collection of `datasets` the ranking modules train on (the CLIR collections are the section's own)."""
    return [config["modular_clir"]["ranking"]["dataset"]] if config.get("modular_clir") else []


def clir_reports(config: Config, kind: str) -> list[str]:
    """The modular CLIR tables (or figures) of the config; none without a ``modular_clir`` section."""
    return list(config["modular_clir"][kind]) if config.get("modular_clir") else []


def clir_packages(config: Config, names: list[str]) -> dict[str, str]:
    return {name: PATHS.clir_package.format(package=name) for name in names}


def corpus_inputs(config: Config, language: str) -> dict[str, str]:
    """A language corpus's inputs: the packages its package parts read, and the local files its text parts read
    (named ``text-<part index>``), so a changed or missing file is seen by Snakemake like a package."""
    parts = config["modular_clir"]["languages"][language]["corpus"]
    packages = [part["package"] for part in parts if part["kind"] != "text"]
    return {**clir_packages(config, list(dict.fromkeys(packages))),
            **{f"text-{index}": part["path"] for index, part in enumerate(parts) if part["kind"] == "text"}}


def collection_packages(config: Config) -> dict[str, str]:
    """The test collection's packages by language (debian-reference); none for a collection given as files."""
    collection = config["modular_clir"]["collection"]
    if collection["source"] != "debian-reference":
        return {}
    return {language: PATHS.clir_package.format(package=name) for language, name in collection["packages"].items()}


def clir_collection_files(config: Config) -> dict[str, list[str] | str]:
    """The test collection's files, by the names the collection rule writes."""
    languages = collection_languages(config)
    return {"docs": [PATHS.clir_docs.format(language=lang) for lang in languages],
            "queries": [PATHS.clir_queries.format(language=lang) for lang in languages],
            "qrels": [PATHS.clir_qrels.format(language=lang) for lang in languages],
            "folds": PATHS.clir_folds, "info": PATHS.clir_collection_info}


def vocabulary_texts(config: Config) -> list[str]:
    """Every text an embedded backbone's trimmed vocabulary must cover: the language corpora (training and
    held-out), the test collection's documents and queries, the English ranking data's."""
    clir = config["modular_clir"]
    if not (clir["backbone"]["name"] == EMBEDDED_MULTILINGUAL and clir["backbone"]["trim_vocabulary"]):
        return []
    corpora = [getattr(PATHS, name).format(language=language) for language in clir["languages"]
               for name in ("clir_corpus", "clir_heldout")]
    files = clir_collection_files(config)
    ranking = clir["ranking"]["dataset"]
    return corpora + files["docs"] + files["queries"] + [CORE.docs.format(dataset=ranking),
                                                         CORE.queries.format(dataset=ranking)]


def clir_backbone(config: Config) -> dict[str, str]:
    """The backbone checkpoint later jobs read, when the workflow makes it (an embedded backbone: expanded,
    then its MLM head fitted; a pretraining run's checkpoint); a hub name or directory is read by name (the
    ``clir_backbone_name`` param)."""
    backbone = config["modular_clir"]["backbone"]
    if backbone["name"] != EMBEDDED_MULTILINGUAL:
        return backbone_input(backbone["name"])
    return {"backbone": PATHS.clir_backbone if backbone["mlm_head"] is None else PATHS.clir_mlm_backbone}


def mlm_head_input(config: Config) -> dict[str, str | list[str]]:
    """Fitting an MLM head: the expanded backbone (or the named one) and every language's texts."""
    languages = list(config["modular_clir"]["languages"])
    backbone = config["modular_clir"]["backbone"]
    return {**({"backbone": PATHS.clir_backbone} if backbone["name"] == EMBEDDED_MULTILINGUAL
               else backbone_input(backbone["name"])),
            "corpora": [PATHS.clir_corpus.format(language=lang) for lang in languages],
            "heldout": [PATHS.clir_heldout.format(language=lang) for lang in languages]}


def source_language_module(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A ranking module trains on the source language's module of its kind (monoBERT on none)."""
    module, _ = ranking_of(wildcards["ranking"])
    if module == "full":
        return {}
    language = config["modular_clir"]["source_language"]
    return {"language_module": PATHS.language_module.format(kind=module, language=language)}


def rerank_clir_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str | list[str]]:
    """A composed reranker's files: its ranking module, the language modules it composes (the query's, the
    document's, or both), the pre-ranking it reranks, the queries (the query language's; reranking NMT + BM25, the
    user's translations into the documents' language, the query side's modules then the documents' language's)
    and the document language's documents."""
    system = CLIR_SYSTEMS[wildcards["system"]]
    query, doc = pair_languages(wildcards["pair"])
    translated = wildcards["prerank"] == TRANSLATED_PRERANK
    languages = composed_languages(system.language, doc if translated else query, doc)
    queries = (config["modular_clir"]["translations"][wildcards["pair"]] if translated
               else PATHS.clir_queries.format(language=query))
    return {"ranking_module": PATHS.ranking_module.format(ranking=wildcards["ranking"], seed=wildcards["seed"]),
            "language_modules": [PATHS.language_module.format(kind=system.module, language=lang) for lang in languages],
            "queries": queries, "docs": PATHS.clir_docs.format(language=doc),
            "prerank": PATHS.clir_prerank.format(pair=wildcards["pair"], prerank=wildcards["prerank"]),
            "folds": PATHS.clir_folds}


def clir_report_runs(config: Config, kind: str, name: str) -> dict[str, list[str]]:
    """The metrics files a CLIR table or figure reads (pair, row, reduction factor, seed, in that order), the
    pre-ranker's per pair, and the ranking modules' summaries (their parameter counts)."""
    clir = config["modular_clir"]
    spec = clir[kind][name]
    seeds = clir["ranking"]["seeds"]
    factors = spec.get("reduction_factors")
    rankings = [(system, ranking_key(CLIR_SYSTEMS[system].module, rf)) for system in spec["systems"]
                for rf in (factors or [clir["ranking"]["reduction_factors"].get(CLIR_SYSTEMS[system].module)])]
    metrics = [PATHS.clir_metrics.format(pair=pair, prerank=spec["prerank"], system=system, ranking=ranking,
                                         seed=seed, fold=CLIR_FOLD)
               for pair in spec["pairs"] for system, ranking in rankings for seed in seeds]
    prerank = [PATHS.clir_prerank_metrics.format(pair=pair, prerank=spec["prerank"], fold=CLIR_FOLD)
               for pair in spec["pairs"]]
    summaries = list(dict.fromkeys(PATHS.ranking_summary.format(ranking=ranking, seed=seed)
                                   for _, ranking in rankings for seed in seeds))
    return {"metrics": metrics, "prerank": prerank, "summaries": summaries, **translated_runs(clir, spec)}


def translated_runs(clir: Mapping, spec: Mapping) -> dict[str, list[str]]:
    """A table's NMT + BM25 row reads, for each pair the user translated, its metrics file and the translations
    (a changed file remakes the table, and the table's record holds its sha256); no row, no such inputs."""
    if "nmt_bm25" not in spec:
        return {}
    translations = clir.get("translations") or {}
    given = {pair: translations[pair] for pair in spec["pairs"] if pair in translations}
    return {"translated": [PATHS.clir_translated_metrics.format(pair=pair, fold=CLIR_FOLD) for pair in given],
            "translations": list(dict.fromkeys(given.values()))}


def nmt_bm25_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """NMT + BM25 of a pair reads the user's translations, the query language's queries (to name a test query
    left untranslated), the folds (its test queries) and the document language's Anserini index."""
    query, doc = pair_languages(wildcards["pair"])
    return {"translations": config["modular_clir"]["translations"][wildcards["pair"]],
            "queries": PATHS.clir_queries.format(language=query), "folds": PATHS.clir_folds,
            "index": PATHS.clir_index.format(language=doc)}


def prerank_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A pre-ranking reads the query language's queries, the folds (its test queries) and the document
    language's index: its embedded documents (dense, embedded once per language, shared by every pair) or its
    Anserini index (BM25; NMT + BM25 also the user's translations of the queries)."""
    query, doc = pair_languages(wildcards["pair"])
    index = PATHS.clir_dense_index if wildcards["prerank"] == "dense" else PATHS.clir_index
    translations = ({"translations": config["modular_clir"]["translations"][wildcards["pair"]]}
                    if wildcards["prerank"] == TRANSLATED_PRERANK else {})
    return {"queries": PATHS.clir_queries.format(language=query), "folds": PATHS.clir_folds,
            "index": index.format(language=doc), **translations}


def prerank_needs_gpu(wildcards: Mapping[str, str]) -> bool:
    """Only the dense pre-ranker runs a model (it encodes the queries); BM25's pre-rankings search an Anserini
    index on the CPU, so their jobs ask no GPU whatever ``resources.prerank_clir`` asks."""
    return wildcards["prerank"] == "dense"


def report_files(config: Config) -> dict[str, str]:
    """Every modular CLIR table's .tex and figure's .pdf by its crate name (``modular-clir/table1``)."""
    return {**{f"{CLIR_PAPER}/{name}": PATHS.clir_table_tex.format(table=name)
               for name in clir_reports(config, "tables")},
            **{f"{CLIR_PAPER}/{name}": PATHS.clir_figure_pdf.format(figure=name)
               for name in clir_reports(config, "figures")}}


def report_cells(config: Config) -> dict[str, list[str]]:
    """Every cell id of every modular CLIR table the config builds, by its crate name, before any job runs."""
    return {f"{CLIR_PAPER}/{name}": clir_cell_ids(clir_report_layout(config, "tables", name))
            for name in clir_reports(config, "tables")}
