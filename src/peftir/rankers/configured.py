"""A ranker as a run configures it: backbone, ranker, fine-tuning method, placed by the job's execution; its data.

What the training and the reranking of one run share, so both build the same model the same way.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

from ..execution.seam import Execution
from ..methods.attach import apply
from ..methods.base import ParamGroups
from . import backbone, inputs, models


def seed_everything(seed: int) -> None:
    """Python, NumPy and torch RNGs from one seed, deterministic kernels: same seed, same run file."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # deterministic cuBLAS on GPUs
    torch.use_deterministic_algorithms(True, warn_only=True)      # CUDA's index_add has no deterministic kernel


def configured_ranker(name: str, backbone_settings: dict, settings: dict, method: dict, lr: dict,
                      execution: Execution) -> tuple[models.Ranker, ParamGroups, object]:
    """Backbone + ranker ``name`` + ``method`` (resolved), placed by the job's ``execution``; callers seed first.

    Returns the ranker, the Adam groups of what trains and the tokenizer.
    """
    loaded = backbone.load(backbone_settings["name"], backbone_settings["layers"])
    ranker = models.build(name, loaded.model, loaded.tokenizer, settings)
    groups = apply(ranker, method, lr)
    return execution.place(ranker), groups, loaded.tokenizer


def saved_weights(path: str | Path, ranker: models.Ranker) -> dict:
    """A run's weights file (``{"state": tensors, "epoch": n}``), on the ranker's device; tensors only."""
    return torch.load(path, map_location=ranker.execution.device, weights_only=True)


def ranking_data(collection: inputs.Collection, run_path: str, qids: list[str], depth: int, tokenizer,
                 settings: dict, keep_docs: bool = True) -> inputs.RankingData:
    """The ``qids``' queries and top-``depth`` candidates, tokenised to the ranker's length limits (the
    documents' word pieces kept for reuse unless ``keep_docs`` is False: scored once)."""
    return inputs.load(collection, run_path, qids, depth, tokenizer, settings["max_query_len"],
                       settings["max_doc_len"], keep_docs)
