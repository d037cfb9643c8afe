"""Jobs of the ranking rules: training one run and reranking its test fold."""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import torch

from .. import backbone, evaluation, methods, provenance, rankers, trec
from .. import data as ranking_data
from ..rerank import rerank
from ..runner import Job
from ..training import Checkpoint, seed_everything, train as train_loop
from .common import fold_split


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


def _checkpoint(job: Job) -> Checkpoint:
    """The job's between-epoch checkpoint, next to its weights; keyed by everything that would rerun it.

    The key covers params, wildcards and the inputs' sizes and modification times (code modules
    included), so a checkpoint is resumed only by the job that wrote it, never after a change.
    """
    inputs = {name: [(path, os.stat(path).st_size, os.stat(path).st_mtime_ns) for path in paths]
              for name, paths in sorted(provenance.files_by_name(job.input).items())}
    key = json.dumps([job.rule, job.params, job.wildcards, inputs], sort_keys=True, default=str)
    return Checkpoint(Path(job.output["weights"]).with_suffix(".ckpt"), hashlib.sha256(key.encode()).hexdigest())


def train(job: Job) -> None:
    """Train one (dataset, ranker, method, fold, seed); keep the best-validation epoch's weights.

    A sequential hybrid's job starts from its first stage's kept weights (input ``first_stage``),
    which stay frozen while the second stage trains for ``training.epochs`` (n) epochs. A job
    killed mid-way resumes from its checkpoint of the last completed epoch.
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
    split = fold_split(job)
    training, reranking = job.params["training"], job.params["rerank"]
    train_data = _data(job, tokenizer, split["train"], training["train_depth"])
    valid_data = _data(job, tokenizer, split["valid"], reranking["depth"])
    metric = job.params["dataset"]["validation_metric"]

    def validate(model: rankers.Ranker) -> float:
        run = rerank(model, valid_data, split["valid"], reranking["batch_size"], desc="validation")
        per_query = evaluation.evaluate_run(run, valid_data.qrels, [metric], split["valid"])
        return evaluation.metric_summary(per_query, [metric])["mean"][metric]

    checkpoint = _checkpoint(job)
    result = train_loop(ranker, groups, train_data, split["train"], validate, training, seed, checkpoint)
    with trec.atomic_write(job.output["weights"], "wb") as handle:
        torch.save({"state": result.best_state, "epoch": result.best_epoch}, handle)
    summary = {"dataset": job.wildcards["dataset"], "ranker": job.wildcards["ranker"],
               "method": job.params["method"]["name"], "fold": job.wildcards["fold"], "seed": seed, **first_stage,
               "trainable_parameters": methods.count_trainable(ranker), "validation_metric": metric,
               "best_epoch": result.best_epoch, "best_validation": result.best_score,
               "epochs": result.history, "seconds": time.time() - start}
    with trec.atomic_write(job.output["summary"]) as handle:
        json.dump(summary, handle, indent=1)
    checkpoint.remove()


def rerank_test(job: Job) -> None:
    """Rerank the test fold's BM25 candidates with the kept weights."""
    seed_everything(int(job.wildcards["seed"]))
    ranker, _, tokenizer = _ranker(job)
    methods.load_learned_state(ranker, _saved_state(job.input["weights"], ranker)["state"])
    test = fold_split(job)["test"]
    depth = job.params["rerank"]["depth"]
    run = rerank(ranker, _data(job, tokenizer, test, depth), test, job.params["rerank"]["batch_size"], desc="test")
    tag = "-".join(job.wildcards[k] for k in ("ranker", "method", "fold", "seed"))
    method = {"retrieval": f"BM25 top-{depth}, reranked", "ranker": job.wildcards["ranker"],
              "fine-tuning": job.params["method"], "backbone": job.params["backbone"],
              "training": job.params["training"], "seed": int(job.wildcards["seed"])}
    data = {"name": job.wildcards["dataset"], "fold": job.wildcards["fold"], "queries": "the fold's test queries"}
    trec.write_run(job.output["run"], run, tag=tag, header=provenance.ir_metadata(tag, method, data, job.source))
