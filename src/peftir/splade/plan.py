"""Planning the Adapters-SPLADE system's jobs from the config alone: which files training, indexing, searching and
reranking read, and the files each table reads."""
from __future__ import annotations

from typing import Any, Mapping

from ..contract.inputs import backbone_input, collection
from ..contract.paths import CORE
from ..contract.retrieval import retrieval_cell, retrieval_cell_ids, searched_collection
from .contract import ARTEFACTS, PATHS, SPARSE_PAPER, splade_folds, splade_report_layout

Config = Mapping[str, Any]


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
             "bm25": CORE.bm25_run.format(dataset=wildcards["dataset"])}
    if method.get("negatives", "bm25") != "bm25":
        found["negatives"] = PATHS.splade_run.format(**{**wildcards, "target": wildcards["dataset"],
                                                        "splade": method["negatives"]})
    if method.get("init"):
        found["init"] = PATHS.splade_model.format(**{**_model(wildcards), "splade": method["init"]})
    if method.get("distil"):
        found["teacher"] = PATHS.splade_teacher.format(dataset=wildcards["dataset"])
    return found


def teacher_scores(config: Config) -> str:
    """The teacher's scores file the ``splade_teacher`` jobs read: a path the config names as it is, or what the
    ``teacher_scores`` job downloads from its URL; an input either way, so its bytes are in every record."""
    source = config["sparse_retrieval"]["teacher"]["scores"]
    return PATHS.splade_teacher_scores if "://" in source else source


def splade_model_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """What indexing or searching with a trained SPLADE retriever loads: its backbone and learned weights."""
    return {**splade_backbone(config, wildcards), "model": PATHS.splade_model.format(**_model(wildcards))}


def splade_search_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A search reads the target's queries and the index of the documents they are searched in: the target's own,
    or another dataset's (``sparse_retrieval.same_documents``: TREC DL's queries in MS MARCO's index)."""
    collection = config["sparse_retrieval"]["same_documents"].get(wildcards["target"], wildcards["target"])
    return {**splade_model_input(config, wildcards), "queries": CORE.queries.format(dataset=wildcards["target"]),
            "index": PATHS.splade_index.format(**{**wildcards, "target": collection})}


def splade_reranker_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """A reranker trains on its dataset's files with BM25's negatives and validation candidates, from its backbone
    (made by the workflow where it is ``pretrained:<run>``)."""
    spec = config["sparse_retrieval"]["rerankers"]["models"][wildcards["reranker"]]
    return {**collection(wildcards), **backbone_input(spec["backbone"]),
            "bm25": CORE.bm25_run.format(dataset=wildcards["dataset"])}


def splade_rerank_input(config: Config, wildcards: Mapping[str, str]) -> dict[str, str]:
    """Reranking reads the target collection's files, the trained reranker and the first stage's run of the target
    (``sparse_retrieval.rerankers.first_stage``: a SPLADE retriever trained on the same dataset, fold and seed)."""
    first = config["sparse_retrieval"]["rerankers"]["first_stage"]
    return {**collection({"dataset": wildcards["target"]}),
            "model": PATHS.reranker_model.format(**{key: wildcards[key] for key in ("dataset", "reranker", "fold",
                                                                                    "seed")}),
            "first_stage": PATHS.splade_run.format(**{**wildcards, **first})}


def datasets(config: Config) -> list[str]:
    """The collections the SPLADE system's jobs read: its dataset, those searched in another's documents and those
    documents, and every table cell's dataset and target."""
    sparse = config.get("sparse_retrieval")
    if not sparse:
        return []
    found = [sparse["dataset"], *sparse["same_documents"], *sparse["same_documents"].values()]
    found += [cell.get(key) for name in splade_report_names(config) for cell in splade_cells(config, name)
              for key in ("dataset", "target")]
    return list(dict.fromkeys(name for name in found if name))


def splade_report_names(config: Config) -> list[str]:
    """Every SPLADE table's name; none without a ``sparse_retrieval`` section."""
    return list((config.get("sparse_retrieval") or {}).get("tables") or {})


def splade_cell_runs(config: Config, cell: Mapping[str, Any]) -> list[str]:
    """The metrics files one SPLADE table cell reads: a retriever's or reranker's per fold × seed on its target
    collection, or BM25's per fold of the collection; a reported cell reads none."""
    if cell.get("reported") or cell.get("mean_of"):
        return []
    target = searched_collection(cell)
    if cell.get("reference") == "bm25":
        return [PATHS.splade_bm25_metrics.format(target=target, fold=fold) for fold in splade_folds(config, target)]
    pattern, named = ((PATHS.reranked_metrics, {"reranker": cell["reranker"]}) if cell.get("reranker") else
                      (PATHS.splade_metrics, {"backbone": cell["backbone"], "splade": cell["splade"]}))
    return [pattern.format(target=target, dataset=cell["dataset"], fold=fold, seed=seed, **named)
            for fold in splade_folds(config, cell["dataset"]) for seed in config["sparse_retrieval"]["seeds"]]


def splade_cells(config: Config, name: str) -> list[dict]:
    """Each cell of a SPLADE table as its row's and column's settings merged (the column's win), in print order."""
    layout = splade_report_layout(config, name)
    return [retrieval_cell(row, column) for row in layout["rows"] for column in layout["columns"]]


def splade_report_runs(config: Config, name: str) -> dict[str, list[str]]:
    """The files a SPLADE table reads: its cells' metrics files (each once, in print order) and the trained
    retrievers' and rerankers' summaries (their trainable parameters)."""
    cells = splade_cells(config, name)
    metrics = list(dict.fromkeys(path for cell in cells for path in splade_cell_runs(config, cell)))
    summaries = list(dict.fromkeys(
        PATHS.splade_summary.format(**_model(wildcards)) if kind == "splade_metrics" else
        PATHS.reranker_summary.format(**{key: wildcards[key] for key in ("dataset", "reranker", "fold", "seed")})
        for kind, wildcards in map(ARTEFACTS.match, metrics) if kind in ("splade_metrics", "reranked_metrics")))
    return {"metrics": metrics, "summaries": summaries}


def report_files(config: Config) -> dict[str, str]:
    """Every SPLADE table's .tex by its crate name (``splade-adapters/table1``)."""
    return {f"{SPARSE_PAPER}/{name}": PATHS.splade_table_tex.format(table=name) for name in splade_report_names(config)}


def report_cells(config: Config) -> dict[str, list[str]]:
    """Every cell id of every SPLADE table the config builds, by its crate name, before any job runs."""
    return {f"{SPARSE_PAPER}/{name}": retrieval_cell_ids(splade_report_layout(config, name))
            for name in splade_report_names(config)}
