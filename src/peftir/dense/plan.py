"""Planning the dense retrieval system's jobs (pretraining, DPTDR, Condenser) from the config alone: which files a
pretraining run, a retriever, a mining job, a figure's attention job and each table and figure read."""
from __future__ import annotations

from typing import Any, Mapping

from ..contract.inputs import backbone_input, collection
from ..contract.measures import GEOMETRY_METRICS
from ..contract.paths import CORE
from ..contract.retrieval import retrieval_cell, retrieval_cell_ids, searched_collection
from ..semi_siamese.contract import PATHS as SEMI_SIAMESE
from .contract import ARTEFACTS, PATHS, prompts_run, dense_figure_layout, dense_figure_names, dense_report_layout

Config = Mapping[str, Any]


def mlm_head_corpus(config: Config) -> dict[str, str]:
    """Fitting the pretraining backbone's MLM head: the corpus's documents, its queries as held-out text."""
    dataset = config["pretraining"]["backbone"]["mlm_head"]["corpus"]
    return {"docs": CORE.docs.format(dataset=dataset), "heldout": CORE.queries.format(dataset=dataset)}


def pretrain_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A pretraining run reads its corpus's documents and starts from the backbone with its MLM head (fitted by
    the workflow where the checkpoint has none), from its own ``backbone`` (a masked LM by name, or a pretraining
    run), or a coCondenser from its Condenser run."""
    spec = config["pretraining"]["runs"][wildcards["pretrained"]]
    found = {"docs": CORE.docs.format(dataset=spec["corpus"])}
    if spec.get("warm_start"):
        return {**found, "warm_start": CORE.pretrained.format(pretrained=spec["warm_start"])}
    if "backbone" in spec:
        return {**found, **backbone_input(spec["backbone"])}
    if config["pretraining"]["backbone"]["mlm_head"] is not None:
        return {**found, "backbone": PATHS.pretraining_mlm_backbone}
    return {**found, **backbone_input(config["pretraining"]["backbone"]["name"])}


def retriever_backbone(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    return backbone_input(config["dense_retrieval"]["backbones"][wildcards["backbone"]])


def train_retriever_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A retriever trains on its dataset's files from its backbone, on BM25's negatives or on the pool UNM mined
    (with ``mining.first_round``, the one pool of that retriever's run, which every cell shares)."""
    shared = config["dense_retrieval"]["mining"].get("first_round") or {}
    negatives = CORE.bm25_run.format(dataset=wildcards["dataset"]) if wildcards["negatives"] == "bm25" \
        else PATHS.mined_negatives.format(**{**wildcards, **shared})
    return {**collection(wildcards), **retriever_backbone(config, wildcards), "negatives": negatives,
            **prompts_input(config, wildcards)}


def prompts_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A DPT retriever whose method names pretrained prompts (``prompts: pretrained:<run>``, DPTDR Table 6) starts
    from that prompt-pretraining run's output; any other starts from fresh ones."""
    run = prompts_run(config["dense_retrieval"]["methods"][wildcards["retriever"]])
    return {"prompts": CORE.pretrained.format(pretrained=run)} if run else {}


def mine_negatives_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """UNM's candidates: BM25's run and the first-round retriever's (``mining.first_round``, the one retriever every
    cell mines with, or else the same retriever trained on BM25's negatives); for ``denoised``, the trained reranker
    that judges them (the pipeline's own, on the same fold)."""
    shared = config["dense_retrieval"]["mining"].get("first_round") or {}
    first_round = PATHS.dense_run.format(**{**wildcards, **shared, "negatives": "bm25"})
    found = {**collection(wildcards), "bm25": CORE.bm25_run.format(dataset=wildcards["dataset"]),
             "first_round": first_round}
    if wildcards["negatives"] == "denoised":
        reranker = config["dense_retrieval"]["mining"]["reranker"]
        found["reranker"] = SEMI_SIAMESE.weights.format(dataset=wildcards["dataset"], ranker=reranker["ranker"],
                                                 method=reranker["method"], fold=wildcards["fold"],
                                                 seed=reranker["seed"])
    return found


def mining_needs_gpu(wildcards: Mapping[str, str]) -> bool:
    """Only denoised mining runs a model (the reranker that judges the candidates); UNM's plain draw samples two
    runs' top documents on the CPU, so its job asks no GPU whatever ``resources.mine_negatives`` asks."""
    return wildcards["negatives"] == "denoised"


def datasets(config: Config) -> list[str]:
    """The collections the dense system's jobs read: the pretraining corpora (the MLM head's and each run's), the
    section's dataset, those searched in its documents and every table cell's dataset and target."""
    pretraining = config.get("pretraining") or {}
    head = (pretraining.get("backbone") or {}).get("mlm_head")
    found = ([head["corpus"]] if head else []) + [spec["corpus"] for spec in pretraining.get("runs", {}).values()]
    if config.get("dense_retrieval"):
        found += [config["dense_retrieval"]["dataset"], *config["dense_retrieval"].get("same_documents", {})]
        for name in dense_report_names(config):
            found += [cell.get(key) for cell in dense_cells(config, *name.split("/")) for key in ("dataset", "target")]
    return list(dict.fromkeys(name for name in found if name))


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
    alignment or uniformity cell (DPTDR Table 8), the geometry files of its retriever or untrained backbone."""
    if row.get("reported") or row.get("mean_of"):
        return []
    geometry = row.get("metric") in GEOMETRY_METRICS
    if row.get("reference") == "bm25" and not geometry:
        return [PATHS.dense_bm25_metrics.format(dataset=searched_collection(row), fold=fold)
                for fold in config["dense_retrieval"]["folds"]]
    if row.get("reference") == "untrained":
        return _per_fold(config, row, PATHS.untrained_geometry if geometry else PATHS.untrained_metrics)
    searched = searched_collection(row)
    pattern = PATHS.dense_geometry if geometry else \
        PATHS.dense_metrics if searched == row["dataset"] else PATHS.dense_target_metrics
    return _per_fold(config, {**row, "target": searched}, pattern, seeds=True)


def _per_fold(config: Config, cell: Mapping[str, Any], pattern: str, seeds: bool = False) -> list[str]:
    """``pattern`` with the cell's settings for each fold of the section (× each seed: a trained retriever's)."""
    dense = config["dense_retrieval"]
    return [pattern.format(**cell, fold=fold, seed=seed)
            for fold in dense["folds"] for seed in (dense["seeds"] if seeds else [None])]


def dense_cells(config: Config, paper: str, name: str) -> list[dict]:
    """Each cell of a dense table as the row's and column's settings merged (the column's win), in print order."""
    layout = dense_report_layout(config, paper, name)
    return [retrieval_cell(row, column) for row in layout["rows"] for column in layout["columns"]]


def dense_report_runs(config: Config, paper: str, name: str) -> dict[str, list[str]]:
    """The files a dense table reads: its cells' metrics files (each once, in print order) and the trained
    retrievers' summaries (their trainable parameters)."""
    cells = dense_cells(config, paper, name)
    metrics = list(dict.fromkeys(path for cell in cells for path in dense_cell_runs(config, cell)))
    summaries = list(dict.fromkeys(PATHS.retriever_summary.format(**wildcards)
                                   for kind, wildcards in map(ARTEFACTS.match, metrics)
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


def judgments(config: Config, wildcards: Mapping[str, str], path: str) -> str:
    """The qrels a dense evaluation reads: the dataset's own, or, where its runs are judged by answer matching
    (``datasets.<name>.answers``), the run's judgments at ``path`` (``PATHS.dense_judgments`` and its kin)."""
    if config["datasets"][wildcards["dataset"]].get("answers"):
        return path.format(**wildcards)
    return CORE.qrels.format(dataset=wildcards["dataset"])


def attention_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """An attention entropy job reads the dataset's documents and its backbone (made by the workflow where it is
    ``pretrained:<run>``), or, fine-tuned, the retriever's trained encoder (full fine-tuning saves it whole)."""
    docs = {"docs": CORE.docs.format(dataset=wildcards["dataset"])}
    if "retriever" not in wildcards:
        return {**docs, **retriever_backbone(config, wildcards)}
    return {**docs, "model": PATHS.retriever_model.format(**{key: wildcards[key] for key in (
        "dataset", "backbone", "retriever", "negatives", "fold", "seed")})}


def report_files(config: Config) -> dict[str, str]:
    """Every dense table's .tex and figure's .pdf by its crate name (``dptdr/table3``, ``condenser/figure2``)."""
    tables = {report: PATHS.dense_table_tex.format(paper=paper, table=name)
              for report in dense_report_names(config) for paper, name in [report.split("/")]}
    return {**tables, **dict(zip(dense_figure_names(config), dense_figure_files(config)))}


def report_cells(config: Config) -> dict[str, list[str]]:
    """Every cell id of every dense table the config builds, by its crate name, before any job runs."""
    return {report: retrieval_cell_ids(dense_report_layout(config, *report.split("/")))
            for report in dense_report_names(config)}
