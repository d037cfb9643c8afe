"""Job functions behind the workflow's rules: each takes a ``runner.Job`` and writes its outputs.

They hold no logic of their own beyond wiring files and params to the
modules that do the work; every output is written atomically.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from . import backbone, bm25, collections, evaluation, folds, methods, rankers, tables, trec
from . import data as ranking_data
from .rerank import rerank
from .runner import Job
from .training import seed_everything, train as train_loop


def export(job: Job) -> None:
    """ir_datasets collection → docs.jsonl, queries.tsv, qrels.txt, info.json."""
    try:
        collections.export_dataset(job.params["spec"], Path(job.output["info"]).parent)
    except collections.MissingDataError as missing:
        sys.exit(str(missing))


def make_folds(job: Job) -> None:
    qids = list(trec.read_topics(job.input["queries"]))
    folds.write_folds(job.output["folds"], folds.make_folds(job.wildcards["dataset"], job.params["spec"], qids))


def index(job: Job) -> None:
    bm25.build_index(Path(job.input["docs"]).parent, job.output["index"], threads=job.threads, log=sys.stderr)


def search(job: Job) -> None:
    settings = job.params["bm25"]
    bm25.search(job.input["index"], job.input["queries"], job.output["run"], k1=settings["k1"], b=settings["b"],
                hits=settings["depth"], threads=job.threads, log=sys.stderr)


def _fold(job: Job) -> dict[str, list[str]]:
    return folds.rotation(json.loads(Path(job.input["folds"]).read_text()), job.wildcards["fold"])


def device(choice: str) -> torch.device:
    """``auto`` takes the GPU when there is one (the paper configuration), else the CPU."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def _ranker(job: Job) -> tuple[rankers.Ranker, methods.ParamGroups, object]:
    """Backbone + ranker + method, as configured, on the configured device; seeded beforehand by the caller."""
    torch.set_num_threads(job.threads)
    loaded = backbone.load(job.params["backbone"]["name"], job.params["backbone"]["layers"])
    ranker = rankers.build(job.wildcards["ranker"], loaded.model, loaded.tokenizer, job.params["ranker"])
    method = job.params["method"]
    groups = methods.apply(ranker, method["name"], method["settings"], job.params["training"]["lr"])
    return ranker.to(device(job.params["device"])), groups, loaded.tokenizer


def _saved_state(path: str, ranker: rankers.Ranker) -> dict:
    return torch.load(path, map_location=ranker.device)


def _data(job: Job, tokenizer, qids: list[str], depth: int) -> ranking_data.RankingData:
    settings = job.params["ranker"]
    return ranking_data.load(Path(job.input["queries"]).parent, job.input["run"], qids, depth, tokenizer,
                             settings["max_query_len"], settings["max_doc_len"])


def train(job: Job) -> None:
    """Train one (dataset, ranker, method, fold, seed); keep the best-validation epoch's weights.

    A sequential hybrid's job starts from its first stage's kept weights (input ``first_stage``),
    which stay frozen while the second stage trains for ``training.epochs`` (n) epochs.
    """
    start = time.time()
    seed = int(job.wildcards["seed"])
    seed_everything(seed)
    ranker, groups, tokenizer = _ranker(job)
    first_stage = {}
    if "first_stage" in job.input:
        saved = _saved_state(job.input["first_stage"], ranker)
        methods.load_first_stage(ranker, saved["state"])
        first_stage = {"first_stage": {"weights": job.input["first_stage"], "best_epoch": saved["epoch"]}}
    split = _fold(job)
    training, reranking = job.params["training"], job.params["rerank"]
    train_data = _data(job, tokenizer, split["train"], training["train_depth"])
    valid_data = _data(job, tokenizer, split["valid"], reranking["depth"])
    metric = job.params["dataset"]["validation_metric"]

    def validate(model: rankers.Ranker) -> float:
        run = rerank(model, valid_data, split["valid"], reranking["batch_size"], desc="validation")
        per_query = evaluation.evaluate_run(run, valid_data.qrels, [metric], split["valid"])
        return evaluation.metric_summary(per_query, [metric])["mean"][metric]

    result = train_loop(ranker, groups, train_data, split["train"], validate, training, seed)
    with trec.atomic_write(job.output["weights"], "wb") as handle:
        torch.save({"state": result.best_state, "epoch": result.best_epoch}, handle)
    summary = {"dataset": job.wildcards["dataset"], "ranker": job.wildcards["ranker"],
               "method": job.params["method"]["name"], "fold": job.wildcards["fold"], "seed": seed, **first_stage,
               "trainable_parameters": methods.count_trainable(ranker), "validation_metric": metric,
               "best_epoch": result.best_epoch, "best_validation": result.best_score,
               "epochs": result.history, "seconds": time.time() - start}
    with trec.atomic_write(job.output["summary"]) as handle:
        json.dump(summary, handle, indent=1)


def rerank_test(job: Job) -> None:
    """Rerank the test fold's BM25 candidates with the kept weights."""
    seed_everything(int(job.wildcards["seed"]))
    ranker, _, tokenizer = _ranker(job)
    methods.load_learned_state(ranker, _saved_state(job.input["weights"], ranker)["state"])
    test = _fold(job)["test"]
    depth = job.params["rerank"]["depth"]
    run = rerank(ranker, _data(job, tokenizer, test, depth), test, job.params["rerank"]["batch_size"], desc="test")
    tag = "-".join(job.wildcards[k] for k in ("ranker", "method", "fold", "seed"))
    trec.write_run(job.output["run"], run, tag=tag)


def evaluate(job: Job) -> None:
    """Per-query and mean metrics of a run on the test queries of one fold."""
    metrics = job.params["metrics"]
    test = _fold(job)["test"]
    run = trec.read_run(job.input["run"])
    if "depth" in job.params:   # BM25 as a reference row: cut at the depth the rerankers see
        run = trec.truncate_run(run, job.params["depth"])
    per_query = evaluation.evaluate_run(run, trec.read_qrels(job.input["qrels"]), metrics, test)
    evaluation.write_metrics(job.output["metrics"], evaluation.metric_summary(per_query, metrics),
                             extra={"run": job.input["run"], "qrels": job.input["qrels"], **job.wildcards})


def _records(job: Job) -> list[tables.RunRecord]:
    records = []
    for metrics_file, summary_file in zip(job.input["metrics"], job.input["summaries"]):
        summary = json.loads(Path(summary_file).read_text())
        records.append(tables.RunRecord(dataset=summary["dataset"], ranker=summary["ranker"],
                                        method=summary["method"], fold=summary["fold"], seed=summary["seed"],
                                        metrics_file=metrics_file,
                                        trainable_parameters=summary["trainable_parameters"]))
    return records


def _groups(spec: dict) -> list[tables.Group]:
    return [tables.Group(label=g["label"], rows=[tables.Row(ranker=g["ranker"], method=r["method"], label=r["label"],
                                                            candidates=tuple(r["candidates"])) for r in g["rows"]])
            for g in spec["groups"]]


def table(job: Job) -> None:
    """Render one result table (LaTeX + JSON + CSV) from the runs' metrics and summaries."""
    spec = job.params["table"]
    reference = {"BM25": {}}
    for metrics_file in job.input["reference"]:
        reference["BM25"].setdefault(json.loads(Path(metrics_file).read_text())["dataset"], []).append(metrics_file)
    built = tables.build_table(spec["name"], spec["caption"], _groups(spec), [tuple(d) for d in spec["datasets"]],
                               spec["metrics"], _records(job), reference)
    tables.write_table(built, job.output["tex"], job.output["json"], job.output["csv"])


def figure(job: Job) -> None:
    """Draw one figure (PDF + PNG + JSON) from the runs' metrics and summaries."""
    from . import figures   # matplotlib: only figure jobs pay for it

    spec = job.params["figure"]
    built = figures.build_figure(spec["name"], spec["caption"], _groups(spec), [tuple(d) for d in spec["datasets"]],
                                 spec["metrics"][0], _records(job))
    figures.write_figure(built, job.output["pdf"], job.output["png"], job.output["json"])
