"""The modular CLIR system's contract with the workflow: its artefacts (packages, corpora, collection, backbone,
language and ranking modules, runs, tables and figure), its composed systems (``CLIR_SYSTEMS``) and what each of its
jobs gets from the config (``PARAMS``)."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..contract.cells import cell_id
from ..contract.params import Config, ParamFunction, Wildcards
from ..contract.paths import CorePaths
from ..contract.wildcards import LANGUAGE, NAME, WILDCARDS as CORE_WILDCARDS, Artefacts

CLIR_PAPER = "modular-clir"                                   # its tables', figures' and crates' folder
CLIR = f"results/{CLIR_PAPER}"                                # the modular cross-lingual rerankers' artefacts
CLIR_RUN = "{pair}/{prerank}/{system}/{ranking}-seed{seed}"    # one composed reranker of one pre-ranking
CLIR_FOLD = "1"     # the test collection's pre-assigned test split (folds scheme presplit)
AVG, AVG_LABEL = "avg", "Avg"       # a table's column of the means over the language pairs
NMT_BM25 = "nmt_bm25"               # the row of BM25 on the user's query translations


@dataclass(frozen=True)
class ClirPaths:
    """Path patterns of the modular CLIR system's artefacts."""

    clir_package: str = f"{CLIR}/packages/{{package}}.deb"
    clir_corpus: str = f"{CLIR}/corpora/{{language}}/train.txt"
    clir_heldout: str = f"{CLIR}/corpora/{{language}}/heldout.txt"
    clir_corpus_info: str = f"{CLIR}/corpora/{{language}}/info.json"
    clir_docs: str = f"{CLIR}/collection/{{language}}/corpus/docs.jsonl"
    clir_queries: str = f"{CLIR}/collection/{{language}}/queries.tsv"
    clir_qrels: str = f"{CLIR}/collection/{{language}}/qrels.txt"   # the queries' judgements on this language's docs
    clir_folds: str = f"{CLIR}/collection/folds.json"
    clir_collection_info: str = f"{CLIR}/collection/info.json"
    clir_index: str = f"{CLIR}/index/{{language}}"
    clir_dense_index: str = f"{CLIR}/dense-index/{{language}}"   # the dense pre-ranker's faiss index
    clir_backbone: str = f"{CLIR}/backbone/expanded"              # an embedded backbone as a checkpoint
    clir_backbone_summary: str = f"{CLIR}/backbone/expanded.json"
    clir_mlm_backbone: str = f"{CLIR}/backbone/mlm-head"          # ... with its MLM head fitted
    clir_mlm_summary: str = f"{CLIR}/backbone/mlm-head.json"
    language_module: str = f"{CLIR}/models/language/{{kind}}/{{language}}"
    language_summary: str = f"{CLIR}/models/language/{{kind}}/{{language}}.json"
    ranking_module: str = f"{CLIR}/models/ranking/{{ranking}}/seed{{seed}}"
    ranking_summary: str = f"{CLIR}/models/ranking/{{ranking}}/seed{{seed}}.json"
    clir_prerank: str = f"{CLIR}/runs/{{pair}}/{{prerank}}.run"
    clir_prerank_metadata: str = f"{CLIR}/runs/{{pair}}/{{prerank}}.ir_metadata.yaml"
    clir_run: str = f"{CLIR}/runs/{CLIR_RUN}.run"
    clir_run_metadata: str = f"{CLIR}/runs/{CLIR_RUN}.ir_metadata.yaml"
    clir_metrics: str = f"{CLIR}/metrics/{CLIR_RUN}/fold{{fold}}.json"
    clir_prerank_metrics: str = f"{CLIR}/metrics/{{pair}}/{{prerank}}/fold{{fold}}.json"
    clir_translated_run: str = f"{CLIR}/runs/{{pair}}/nmt-bm25.run"
    clir_translated_metadata: str = f"{CLIR}/runs/{{pair}}/nmt-bm25.ir_metadata.yaml"
    clir_translated_metrics: str = f"{CLIR}/metrics/{{pair}}/nmt-bm25/fold{{fold}}.json"
    clir_table_tex: str = f"results/tables/{CLIR_PAPER}/{{table}}.tex"
    clir_table_json: str = f"results/tables/{CLIR_PAPER}/{{table}}.json"
    clir_table_csv: str = f"results/tables/{CLIR_PAPER}/{{table}}.csv"
    clir_figure_pdf: str = f"results/figures/{CLIR_PAPER}/{{figure}}.pdf"
    clir_figure_png: str = f"results/figures/{CLIR_PAPER}/{{figure}}.png"
    clir_figure_json: str = f"results/figures/{CLIR_PAPER}/{{figure}}.json"


PATHS = ClirPaths()


@dataclass(frozen=True)
class ClirSystem:
    """A reranker composed at test time (``peftir.clir.reranker``): the kind of its ranking module
    and the language modules under it."""

    module: str               # adapter (RA), sftm (RM) or full (monoBERT: no language module)
    language: str | None      # query, doc, split (adapters), both (SFTMs), or None
    invertible: bool = True   # False: the language adapters' invertible adapters deleted (-INV)


CLIR_SYSTEMS: Mapping[str, ClirSystem] = MappingProxyType({
    "monobert": ClirSystem("full", None, False),
    "ra_query": ClirSystem("adapter", "query"),
    "ra_doc": ClirSystem("adapter", "doc"),
    "ra_split": ClirSystem("adapter", "split"),
    "ra_doc_noinv": ClirSystem("adapter", "doc", invertible=False),
    "ra_nola": ClirSystem("adapter", None, invertible=False),       # -LA -INV: the RA alone
    "rm_query": ClirSystem("sftm", "query"),
    "rm_doc": ClirSystem("sftm", "doc"),
    "rm_both": ClirSystem("sftm", "both"),
})
# a multilingual encoder's cosine (CLIR), BM25 with an analyzer, or BM25 of the user's query translations into the
# documents' language, whose translated query the rerankers then read too (the modular CLIR paper's Table 2)
PRERANKERS = ("dense", "bm25", "nmt_bm25")
TRANSLATED_PRERANK = "nmt_bm25"
LANGUAGE_MODULES = ("adapter", "sftm")
RANKING = r"(?:adapter|sftm)-rf\d+|full"


def ranking_key(module: str, reduction_factor: int) -> str:
    """A ranking module's name in paths: ``adapter-rf16``, ``sftm-rf2``, ``full``."""
    return "full" if module == "full" else f"{module}-rf{reduction_factor}"


def ranking_of(key: str) -> tuple[str, int | None]:
    """``ranking_key``'s inverse: (module kind, reduction factor or None)."""
    if key == "full":
        return "full", None
    module, rf = key.split("-rf")
    return module, int(rf)


def composed_languages(role: str | None, query: str, doc: str) -> list[str]:
    """The languages whose modules a system composes (``ClirSystem.language``), query's first, each once."""
    roles = {"query": [query], "doc": [doc], "split": [query, doc], "both": [query, doc], None: []}[role]
    return list(dict.fromkeys(roles))


def pair_languages(pair: str) -> tuple[str, str]:
    """``en-de`` → (query language, document language)."""
    query, doc = pair.split("-")
    return query, doc


def _clir(config: Config) -> dict:
    return config["modular_clir"]


def collection_languages(config: Config) -> list[str]:
    """The languages of the CLIR test collection: those debian-reference has packages for, those an ir_datasets or
    a files collection names, else every configured one."""
    collection = _clir(config)["collection"]
    if collection["source"] == "debian-reference":
        return list(collection["packages"])
    return list(collection.get("languages") or _clir(config)["languages"])


def _ranking_module(config: Config, wildcards: Wildcards) -> dict:
    """A ranking module's kind, reduction factor and training settings (common, then its kind's)."""
    ranking = _clir(config)["ranking"]
    module, rf = ranking_of(wildcards["ranking"])
    return {"kind": module, "reduction_factor": rf, "source_language": _clir(config)["source_language"],
            **ranking["train"], **ranking[module], "head_pooler": _clir(config)["backbone"]["head_pooler"]}


def _clir_prerank(config: Config, wildcards: Wildcards) -> dict:
    """A pre-ranker's settings; BM25 (of the query or of its translation) with the analyzer of the documents'
    language."""
    translated = wildcards["prerank"] == TRANSLATED_PRERANK
    settings = dict(_clir(config)["prerank"]["bm25" if translated else wildcards["prerank"]])
    if wildcards["prerank"] in ("bm25", TRANSLATED_PRERANK):
        settings["analyzer"] = _clir(config)["languages"][pair_languages(wildcards["pair"])[1]]["analyzer"]
    return settings


def _clir_rerank(config: Config, wildcards: Wildcards) -> dict:
    """A composed reranker's settings; ``translated_query`` where it reranks NMT + BM25's ranking of the user's
    translations, whose translated query (in the documents' language) it reads too."""
    translated = {"translated_query": True} if wildcards["prerank"] == TRANSLATED_PRERANK else {}
    return {**_clir(config)["rerank"], "head_pooler": _clir(config)["backbone"]["head_pooler"], **translated}


def clir_report_layout(config: Config, kind: str, name: str) -> dict:
    """What a CLIR table or figure job needs to lay itself out: columns (language pairs), its pre-ranker row,
    system rows with the ranking module each reads, and for a figure the reduction factors."""
    clir = _clir(config)
    spec, labels = clir[kind][name], clir["labels"]
    factors = clir["ranking"]["reduction_factors"]
    return {"name": name, "caption": spec["caption"], "metric": clir["metric"],
            "columns": [[pair, "-".join(clir["languages"][lang]["label"] for lang in pair_languages(pair))]
                        for pair in spec["pairs"]],
            "prerank": {"system": spec["prerank"], "label": labels["prerank"][spec["prerank"]]},
            "rows": [{"system": system, "label": labels["systems"][system], "module": CLIR_SYSTEMS[system].module,
                      "ranking": ranking_key(CLIR_SYSTEMS[system].module, factors.get(CLIR_SYSTEMS[system].module))}
                     for system in spec["systems"]],
            "reduction_factors": spec.get("reduction_factors"), "seeds": list(clir["ranking"]["seeds"]),
            **({"nmt_bm25": nmt_bm25_row(clir, spec)} if "nmt_bm25" in spec else {})}


def clir_cell_ids(layout: Mapping[str, Any]) -> list[str]:
    """Every cell id of a CLIR table with this layout (``clir_report_layout``), in print order: the pre-ranker's
    row, the NMT + BM25 row where there is one, each system's row; per row the pairs, then Avg."""
    rows = [layout["prerank"]["system"], *([NMT_BM25] if "nmt_bm25" in layout else []),
            *(row["system"] for row in layout["rows"])]
    columns = [pair for pair, _ in layout["columns"]] + [AVG]
    return [cell_id("", row, column, layout["metric"]) for row in rows for column in columns]


TRANSLATIONS = "modular_clir.translations"     # the user's query translations, per pair (NMT + BM25)


def nmt_bm25_row(clir: Mapping[str, Any], spec: Mapping[str, Any]) -> dict:
    """A table's NMT + BM25 row: its label, the config key that takes the translations, and per pair the user's
    translations file (None: not given, the cell printed "-")."""
    given = clir.get("translations") or {}
    return {"label": spec["nmt_bm25"], "key": TRANSLATIONS, "translations": {pair: given.get(pair)
                                                                             for pair in spec["pairs"]}}


WILDCARDS = {"package": NAME, "language": LANGUAGE, "kind": "|".join(LANGUAGE_MODULES), "ranking": RANKING,
             "pair": f"{LANGUAGE}-{LANGUAGE}", "prerank": "|".join(PRERANKERS),
             "system": "|".join(sorted(CLIR_SYSTEMS, key=len, reverse=True))}
# the artefacts this system's jobs read and write, matched back from their paths
ARTEFACTS = Artefacts([CorePaths(), PATHS], {**CORE_WILDCARDS, **WILDCARDS})

PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "clir_package": lambda config, wc: _clir(config)["packages"][wc["package"]],
    "clir_pins": lambda config, wc: {name: spec["sha256"] for name, spec in _clir(config)["packages"].items()},
    "clir_corpus": lambda config, wc: {"parts": _clir(config)["languages"][wc["language"]]["corpus"],
                                       **_clir(config)["corpus"]},
    "clir_collection": lambda config, wc: _clir(config)["collection"],
    "clir_languages": lambda config, wc: collection_languages(config),
    "clir_analyzer": lambda config, wc: _clir(config)["languages"][wc["language"]]["analyzer"],
    "clir_backbone": lambda config, wc: _clir(config)["backbone"],
    "clir_backbone_name": lambda config, wc: _clir(config)["backbone"]["name"],
    "language_module": lambda config, wc: _clir(config)["language_modules"][wc["kind"]],
    "ranking_module": _ranking_module,
    "clir_prerank": _clir_prerank,
    "clir_encoder": lambda config, wc: _clir(config)["prerank"]["dense"]["model"],
    "clir_system": lambda config, wc: {"name": wc["system"], **vars(CLIR_SYSTEMS[wc["system"]])},
    "clir_rerank": _clir_rerank,
    "clir_metric": lambda config, wc: [_clir(config)["metric"]],
    "clir_table": lambda config, wc: clir_report_layout(config, "tables", wc["table"]),
    "clir_figure": lambda config, wc: clir_report_layout(config, "figures", wc["figure"]),
    "clir_translated": lambda config, wc: _clir_prerank(config, {**wc, "prerank": "bm25"}),   # BM25's, on translations
})
