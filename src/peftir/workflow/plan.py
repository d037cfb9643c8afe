"""Planning the DAG from the config alone (no data): which files each job reads, what it asks for.

The rules' input functions and resources come from here; paths from ``peftir.layout``. Each
function takes the config and, where it depends on one job, that job's wildcards as a dict.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..data.folds import fold_ids
from ..layout import (CLIR_PAPER, CLIR_SYSTEMS, DENSE_PAPERS, EMBEDDED_MULTILINGUAL, GEOMETRY_METRICS, PATHS,
                      REFERENCES, SPARSE_PAPER, artefact, collection_languages, composed_languages, dataset_training,
                      dense_cell, dense_figure_layout, dense_figure_names, dense_report_layout, first_stage, kept,
                      pair_languages, pretrained_run, ranking_key, ranking_of, row_methods, searched, splade_folds,
                      splade_report_layout, train_pairs)

Config = Mapping[str, Any]


def datasets(config: Config) -> list[str]:
    return list(config["experiment"]["datasets"])


def folds_of(config: Config, dataset: str) -> list[str]:
    """Fold ids of a dataset, known from its config entry alone."""
    return fold_ids(config["datasets"][dataset])


def reports(config: Config, kind: str) -> list[str]:
    """The tables (or figures) that have a ranker this experiment runs."""
    return [name for name, spec in config[kind].items() if kept(config, spec["rankers"])]


def collection(wildcards: Mapping[str, str]) -> dict[str, str]:
    """A dataset's exported files, by the names ``peftir.rankers.inputs.Collection`` takes."""
    return {name: getattr(PATHS, name).format(dataset=wildcards["dataset"])
            for name in ("queries", "qrels", "docs", "docs_lookup", "folds")}


def triples_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A training job reads the dataset's fixed training triples when it has them (MS MARCO)."""
    if train_pairs(config, wildcards["dataset"])["source"] == "bm25":
        return {}
    return {"triples": PATHS.triples.format(dataset=wildcards["dataset"])}


def first_stage_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A sequential hybrid starts from its first part's kept weights: the standalone run's when m equals
    the standalone epochs (the paper's setting), else that part's run of m epochs (``epochs{m}/``),
    which every hybrid with the same first part shares."""
    first = first_stage(wildcards["method"])
    if first is None:
        return {}
    settings = dataset_training(config, wildcards["dataset"])
    m = settings["sequential"]["first_epochs"]
    named = {**wildcards, "method": first, "epochs": m}
    if m == settings["epochs"]:
        return {"first_stage": PATHS.weights.format(**named)}
    return {"first_stage": PATHS.first_stage_weights.format(**named)}


def report_runs(config: Config, kind: str, name: str, pattern: str) -> list[str]:
    """``pattern`` (``PATHS.metrics`` or ``PATHS.summary``) for every run a table or figure summarises,
    in one fixed order: dataset, ranker, method, fold, seed."""
    spec = config[kind][name]
    methods = list(dict.fromkeys(m for row in spec["methods"] for m in row_methods(config, spec, row)))
    return [pattern.format(dataset=dataset, ranker=ranker, method=method, fold=fold, seed=seed)
            for dataset in datasets(config)
            for ranker in kept(config, spec["rankers"])
            for method in methods
            for fold in folds_of(config, dataset)
            for seed in config["experiment"]["seeds"]]


def report_file(config: Config, report: str) -> str:
    """A table's .tex or a figure's .pdf, by name (what a crate is made of): ``table5`` for the Semi-Siamese
    paper's, ``modular-clir/table1`` for the modular CLIR paper's."""
    paper, _, name = report.rpartition("/")
    if paper in DENSE_PAPERS and report in dense_report_names(config):
        return PATHS.dense_table_tex.format(paper=paper, table=name)
    if paper in DENSE_PAPERS and report in dense_figure_names(config):
        return PATHS.dense_figure_pdf.format(paper=paper, figure=name)
    if paper == SPARSE_PAPER and name in splade_report_names(config):
        return PATHS.splade_table_tex.format(table=name)
    if paper == CLIR_PAPER:
        if name in clir_reports(config, "tables"):
            return PATHS.clir_table_tex.format(table=name)
        if name in clir_reports(config, "figures"):
            return PATHS.clir_figure_pdf.format(figure=name)
    elif not paper:
        if name in config["tables"]:
            return PATHS.table_tex.format(table=name)
        if name in config["figures"]:
            return PATHS.figure_pdf.format(figure=name)
    raise ValueError(f"no table or figure named {report!r}; reports: {', '.join(crate_reports(config))}")


def crate_reports(config: Config) -> list[str]:
    """Every table and figure of the config by its crate name (``table5``, ``modular-clir/table1``)."""
    return [*config["tables"], *config["figures"],
            *(f"{CLIR_PAPER}/{name}" for kind in ("tables", "figures") for name in clir_reports(config, kind)),
            *dense_report_names(config), *dense_figure_names(config),
            *(f"{SPARSE_PAPER}/{name}" for name in splade_report_names(config))]


def reference_runs(config: Config) -> list[str]:
    """The reference systems' per-fold metrics files (BM25, the untrained backbone): every table's reference rows."""
    return [PATHS.reference_metrics.format(dataset=d, reference=r, fold=f)
            for r in config["experiment"]["references"] for d in datasets(config) for f in folds_of(config, d)]


def reference_run(wildcards: Mapping[str, str]) -> str:
    """The run a reference system's metrics are computed from."""
    return getattr(PATHS, REFERENCES[wildcards["reference"]]).format(dataset=wildcards["dataset"])


def resources(config: Config, rule: str, wildcards: Mapping[str, str]) -> dict:
    """What one job of ``rule`` asks for: ``config.resources.<rule>`` with the dataset's overrides
    (``datasets.<name>.resources.<rule>``); threads, mem_mb, runtime (minutes), gpu, and gpu_model
    where set; a job that searches a collection (``target``) takes that collection's overrides. Partitions, account
    and QoS are site settings of the SLURM profile, not config."""
    dataset = wildcards.get("target") or wildcards.get("dataset")
    overrides = config["datasets"][dataset].get("resources", {}).get(rule, {}) if dataset else {}
    return {"gpu": 0, **config["resources"][rule], **overrides}



# --- modular cross-lingual rerankers -----------------------------------------------------------------
CLIR_FOLD = "1"     # the test collection's pre-assigned test split (folds scheme presplit)


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
    return corpora + files["docs"] + files["queries"] + [PATHS.docs.format(dataset=ranking),
                                                         PATHS.queries.format(dataset=ranking)]


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
    document's, or both), the pre-ranking it reranks, the query language's queries and the document language's documents."""
    system = CLIR_SYSTEMS[wildcards["system"]]
    query, doc = pair_languages(wildcards["pair"])
    languages = composed_languages(system.language, query, doc)
    return {"ranking_module": PATHS.ranking_module.format(ranking=wildcards["ranking"], seed=wildcards["seed"]),
            "language_modules": [PATHS.language_module.format(kind=system.module, language=lang) for lang in languages],
            "queries": PATHS.clir_queries.format(language=query), "docs": PATHS.clir_docs.format(language=doc),
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
    Anserini index (BM25)."""
    query, doc = pair_languages(wildcards["pair"])
    index = PATHS.clir_dense_index if wildcards["prerank"] == "dense" else PATHS.clir_index
    return {"queries": PATHS.clir_queries.format(language=query), "folds": PATHS.clir_folds,
            "index": index.format(language=doc)}


# --- pretraining and dense retrieval ------------------------------------------------------------------
def backbone_input(name: str) -> dict[str, str]:
    """A backbone the workflow makes (``pretrained:<run>``) as a job's input, so the DAG builds it first; a hub
    name, a directory or the embedded model is read by name."""
    run = pretrained_run(name)
    return {"backbone": PATHS.pretrained.format(pretrained=run)} if run else {}


def pretraining_runs(config: Config) -> list[str]:
    return list(config["pretraining"]["runs"]) if config.get("pretraining") else []


def mlm_head_corpus(config: Config) -> dict[str, str]:
    """Fitting the pretraining backbone's MLM head: the corpus's documents, its queries as held-out text."""
    dataset = config["pretraining"]["backbone"]["mlm_head"]["corpus"]
    return {"docs": PATHS.docs.format(dataset=dataset), "heldout": PATHS.queries.format(dataset=dataset)}


def pretrain_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A pretraining run reads its corpus's documents and starts from the backbone with its MLM head (fitted by
    the workflow where the checkpoint has none), from its own ``backbone`` (a masked LM by name, or a pretraining
    run), or a coCondenser from its Condenser run."""
    spec = config["pretraining"]["runs"][wildcards["pretrained"]]
    found = {"docs": PATHS.docs.format(dataset=spec["corpus"])}
    if spec.get("warm_start"):
        return {**found, "warm_start": PATHS.pretrained.format(pretrained=spec["warm_start"])}
    if "backbone" in spec:
        return {**found, **backbone_input(spec["backbone"])}
    if config["pretraining"]["backbone"]["mlm_head"] is not None:
        return {**found, "backbone": PATHS.pretraining_mlm_backbone}
    return {**found, **backbone_input(config["pretraining"]["backbone"]["name"])}


def dense_dataset(config: Config) -> str:
    return config["dense_retrieval"]["dataset"]


def retriever_backbone(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    return backbone_input(config["dense_retrieval"]["backbones"][wildcards["backbone"]])


def train_retriever_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A retriever trains on its dataset's files from its backbone, on BM25's negatives or on the pool UNM mined
    (with ``mining.first_round``, the one pool of that retriever's run, which every cell shares)."""
    shared = config["dense_retrieval"]["mining"].get("first_round") or {}
    negatives = PATHS.bm25_run.format(dataset=wildcards["dataset"]) if wildcards["negatives"] == "bm25" \
        else PATHS.mined_negatives.format(**{**wildcards, **shared})
    return {**collection(wildcards), **retriever_backbone(config, wildcards), "negatives": negatives,
            **prompts_input(config, wildcards)}


def prompts_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A DPT retriever whose method names pretrained prompts (``prompts: pretrained:<run>``, DPTDR Table 6) starts
    from that prompt-pretraining run's output; any other starts from fresh ones."""
    run = pretrained_run(config["dense_retrieval"]["methods"][wildcards["retriever"]].get("prompts", ""))
    return {"prompts": PATHS.pretrained.format(pretrained=run)} if run else {}


def mine_negatives_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """UNM's candidates: BM25's run and the first-round retriever's (``mining.first_round``, the one retriever every
    cell mines with, or else the same retriever trained on BM25's negatives); for ``denoised``, the trained reranker
    that judges them (the pipeline's own, on the same fold)."""
    shared = config["dense_retrieval"]["mining"].get("first_round") or {}
    first_round = PATHS.dense_run.format(**{**wildcards, **shared, "negatives": "bm25"})
    found = {**collection(wildcards), "bm25": PATHS.bm25_run.format(dataset=wildcards["dataset"]),
             "first_round": first_round}
    if wildcards["negatives"] == "denoised":
        reranker = config["dense_retrieval"]["mining"]["reranker"]
        found["reranker"] = PATHS.weights.format(dataset=wildcards["dataset"], ranker=reranker["ranker"],
                                                 method=reranker["method"], fold=wildcards["fold"],
                                                 seed=reranker["seed"])
    return found


def dense_report_names(config: Config) -> list[str]:
    """Every dense table as ``<paper>/<table>`` (``dptdr/table3``); none without a ``dense_retrieval`` section."""
    if not config.get("dense_retrieval"):
        return []
    return [f"{paper}/{name}" for paper, tables in config["dense_retrieval"]["tables"].items()
            for name in tables or {}]


def dense_cell_runs(config: Config, row: Mapping[str, Any]) -> list[str]:
    """The metrics files one row's cell reads: a retriever's per fold × seed, BM25's or an untrained backbone's
    per fold; a reported row reads none. A cell with a ``target`` (TREC DL 2019 beside MS MARCO's dev queries)
    reads the retriever's search of that dataset's queries in its own index, and BM25's run of the target; an
    alignment or uniformity cell, the geometry files of its retriever or untrained backbone."""
    dense = config["dense_retrieval"]
    dataset, folds, seeds = row["dataset"], dense["folds"], dense["seeds"]
    if row.get("reported") or row.get("mean_of"):
        return []
    if row.get("metric") in GEOMETRY_METRICS:
        return dense_geometry_files(config, row)
    if row.get("reference") == "bm25":
        return [PATHS.dense_bm25_metrics.format(dataset=searched(row), fold=fold) for fold in folds]
    if row.get("reference") == "untrained":
        return [PATHS.untrained_metrics.format(dataset=dataset, backbone=row["backbone"], fold=fold) for fold in folds]
    pattern = PATHS.dense_metrics if searched(row) == dataset else PATHS.dense_target_metrics
    return [pattern.format(target=searched(row), dataset=dataset, backbone=row["backbone"],
                           retriever=row["retriever"], negatives=row["negatives"], fold=fold, seed=seed)
            for fold in folds for seed in seeds]


def dense_geometry_files(config: Config, cell: Mapping[str, Any]) -> list[str]:
    """The alignment and uniformity a cell of those metrics reads (DPTDR Table 8): its untrained backbone's per fold,
    or its retriever's per fold × seed."""
    dense = config["dense_retrieval"]
    if cell.get("reference") == "untrained":
        return [PATHS.untrained_geometry.format(dataset=cell["dataset"], backbone=cell["backbone"], fold=fold)
                for fold in dense["folds"]]
    return [PATHS.dense_geometry.format(dataset=cell["dataset"], backbone=cell["backbone"], retriever=cell["retriever"],
                                        negatives=cell["negatives"], fold=fold, seed=seed)
            for fold in dense["folds"] for seed in dense["seeds"]]


def dense_cells(config: Config, paper: str, name: str) -> list[dict]:
    """Each cell of a dense table as the row's and column's settings merged (the column's win), in print order."""
    layout = dense_report_layout(config, paper, name)
    return [dense_cell(row, column) for row in layout["rows"] for column in layout["columns"]]


def dense_report_runs(config: Config, paper: str, name: str) -> dict[str, list[str]]:
    """The files a dense table reads: its cells' metrics files (each once, in print order) and the trained
    retrievers' summaries (their trainable parameters)."""
    cells = dense_cells(config, paper, name)
    metrics = list(dict.fromkeys(path for cell in cells for path in dense_cell_runs(config, cell)))
    summaries = list(dict.fromkeys(PATHS.retriever_summary.format(**wildcards)
                                   for kind, wildcards in map(artefact, metrics)
                                   if kind in ("dense_metrics", "dense_target_metrics", "dense_geometry")))
    return {"metrics": metrics, "summaries": summaries}


def dense_figure_inputs(config: Config, paper: str, name: str) -> dict[str, list[str]]:
    """The attention entropies a figure of [CLS] attention (Condenser Figure 2) reads, in panel order: each panel's
    backbone as it comes, and the retriever fine-tuned from it (the figure's method and negatives)."""
    return attention_files(dense_figure_layout(config, paper, name))


def attention_files(figure: Mapping[str, Any]) -> dict[str, list[str]]:
    """A figure's attention entropy files by its layout (``dense_figure_layout``), in panel order: what its job reads
    and, from the layout its record keeps, the order the audit rebuilds it in (records sort their inputs)."""
    paper, name = figure["name"].split("/")
    named = {"paper": paper, "figure": name, "dataset": figure["dataset"]}
    return {"pretrained": [PATHS.attention_pretrained.format(**named, backbone=panel["backbone"])
                           for panel in figure["panels"]],
            "fine_tuned": [PATHS.attention_finetuned.format(**named, **figure["fine_tuned"], backbone=panel["backbone"])
                           for panel in figure["panels"]]}


def dense_figure_files(config: Config) -> list[str]:
    """Every dense figure's PDF (the targets ``all_tables`` and ``all_dense_tables`` build)."""
    return [PATHS.dense_figure_pdf.format(paper=paper, figure=name)
            for paper, name in (report.split("/") for report in dense_figure_names(config))]


def attention_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """An attention entropy job reads the dataset's documents and its backbone (made by the workflow where it is
    ``pretrained:<run>``), or, fine-tuned, the retriever's trained encoder (full fine-tuning saves it whole)."""
    docs = {"docs": PATHS.docs.format(dataset=wildcards["dataset"])}
    if "retriever" not in wildcards:
        return {**docs, **retriever_backbone(config, wildcards)}
    return {**docs, "model": PATHS.retriever_model.format(**{key: wildcards[key] for key in (
        "dataset", "backbone", "retriever", "negatives", "fold", "seed")})}


# --- SPLADE with adapters -------------------------------------------------------------------------------------
def splade_backbone(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    return backbone_input(config["sparse_retrieval"]["backbones"][wildcards["backbone"]]["name"])


def _model(wildcards: Mapping[str, str]) -> dict[str, str]:
    return {key: wildcards[key] for key in ("dataset", "backbone", "splade", "fold", "seed")}


def train_splade_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A SPLADE retriever trains on its dataset's files from its backbone (made by the workflow where it is
    ``pretrained:<run>``), with BM25's run (validation candidates; negatives unless the method names a retriever
    whose run gives them, or distils from the teacher's scored documents) and, for a second round, the first
    round's retriever to start from."""
    method = config["sparse_retrieval"]["methods"][wildcards["splade"]]
    found = {**collection(wildcards), **splade_backbone(config, wildcards),
             "bm25": PATHS.bm25_run.format(dataset=wildcards["dataset"])}
    if method.get("negatives", "bm25") != "bm25":
        found["negatives"] = PATHS.splade_run.format(**{**wildcards, "target": wildcards["dataset"],
                                                        "splade": method["negatives"]})
    if method.get("init"):
        found["init"] = PATHS.splade_model.format(**{**_model(wildcards), "splade": method["init"]})
    if method.get("distil"):
        found["teacher"] = PATHS.splade_teacher.format(dataset=wildcards["dataset"])
    return found


def splade_model_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """What indexing or searching with a trained SPLADE retriever loads: its backbone and learned weights."""
    return {**splade_backbone(config, wildcards), "model": PATHS.splade_model.format(**_model(wildcards))}


def splade_search_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A search reads the target's queries and the index of the documents they are searched in: the target's own,
    or another dataset's (``sparse_retrieval.same_documents``: TREC DL's queries in MS MARCO's index)."""
    collection = config["sparse_retrieval"]["same_documents"].get(wildcards["target"], wildcards["target"])
    return {**splade_model_input(config, wildcards), "queries": PATHS.queries.format(dataset=wildcards["target"]),
            "index": PATHS.splade_index.format(**{**wildcards, "target": collection})}


def splade_reranker_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A reranker trains on its dataset's files with BM25's negatives and validation candidates, from its backbone
    (made by the workflow where it is ``pretrained:<run>``)."""
    spec = config["sparse_retrieval"]["rerankers"]["models"][wildcards["reranker"]]
    return {**collection(wildcards), **backbone_input(spec["backbone"]),
            "bm25": PATHS.bm25_run.format(dataset=wildcards["dataset"])}


def splade_rerank_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """Reranking reads the target collection's files, the trained reranker and the first stage's run of the target
    (``sparse_retrieval.rerankers.first_stage``: a SPLADE retriever trained on the same dataset, fold and seed)."""
    first = config["sparse_retrieval"]["rerankers"]["first_stage"]
    return {**collection({"dataset": wildcards["target"]}),
            "model": PATHS.reranker_model.format(**{key: wildcards[key] for key in ("dataset", "reranker", "fold",
                                                                                    "seed")}),
            "first_stage": PATHS.splade_run.format(**{**wildcards, **first})}


def splade_report_names(config: Config) -> list[str]:
    """Every SPLADE table's name; none without a ``sparse_retrieval`` section."""
    return list((config.get("sparse_retrieval") or {}).get("tables") or {})


def splade_cell_runs(config: Config, cell: Mapping[str, Any]) -> list[str]:
    """The metrics files one SPLADE table cell reads: a retriever's or reranker's per fold × seed on its target
    collection, or BM25's per fold of the collection; a reported cell reads none."""
    if cell.get("reported") or cell.get("mean_of"):
        return []
    target = searched(cell)
    if cell.get("reference") == "bm25":
        return [PATHS.splade_bm25_metrics.format(target=target, fold=fold) for fold in splade_folds(config, target)]
    pattern, named = ((PATHS.reranked_metrics, {"reranker": cell["reranker"]}) if cell.get("reranker") else
                      (PATHS.splade_metrics, {"backbone": cell["backbone"], "splade": cell["splade"]}))
    return [pattern.format(target=target, dataset=cell["dataset"], fold=fold, seed=seed, **named)
            for fold in splade_folds(config, cell["dataset"]) for seed in config["sparse_retrieval"]["seeds"]]


def splade_cells(config: Config, name: str) -> list[dict]:
    """Each cell of a SPLADE table as its row's and column's settings merged (the column's win), in print order."""
    layout = splade_report_layout(config, name)
    return [dense_cell(row, column) for row in layout["rows"] for column in layout["columns"]]


def splade_report_runs(config: Config, name: str) -> dict[str, list[str]]:
    """The files a SPLADE table reads: its cells' metrics files (each once, in print order) and the trained
    retrievers' and rerankers' summaries (their trainable parameters)."""
    cells = splade_cells(config, name)
    metrics = list(dict.fromkeys(path for cell in cells for path in splade_cell_runs(config, cell)))
    summaries = list(dict.fromkeys(
        PATHS.splade_summary.format(**_model(wildcards)) if kind == "splade_metrics" else
        PATHS.reranker_summary.format(**{key: wildcards[key] for key in ("dataset", "reranker", "fold", "seed")})
        for kind, wildcards in map(artefact, metrics) if kind in ("splade_metrics", "reranked_metrics")))
    return {"metrics": metrics, "summaries": summaries}
