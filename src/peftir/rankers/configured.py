"""A ranker as a run configures it: backbone, ranker, fine-tuning method, device; and its data.

What the training and the reranking of one run share, so both build the same model the same way.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

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


def device(choice: str) -> torch.device:
    """``auto`` takes the GPU when there is one (the paper configuration), else the CPU."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def configured_ranker(name: str, backbone_settings: dict, settings: dict, method: dict, lr: dict, on: str,
                      threads: int) -> tuple[models.Ranker, ParamGroups, object]:
    """Backbone + ranker ``name`` + ``method`` (resolved), on the device ``on`` names; callers seed first.

    Returns the ranker, the Adam groups of what trains and the tokenizer.
    """
    torch.set_num_threads(threads)
    loaded = backbone.load(backbone_settings["name"], backbone_settings["layers"])
    ranker = models.build(name, loaded.model, loaded.tokenizer, settings)
    groups = apply(ranker, method, lr)
    return ranker.to(device(on)), groups, loaded.tokenizer


def saved_weights(path: str | Path, ranker: models.Ranker) -> dict:
    """A run's weights file (``{"state": tensors, "epoch": n}``), on the ranker's device; tensors only."""
    return torch.load(path, map_location=ranker.device, weights_only=True)


def ranking_data(collection: inputs.Collection, run_path: str, qids: list[str], depth: int, tokenizer,
                 settings: dict) -> inputs.RankingData:
    """The ``qids``' queries and top-``depth`` candidates, tokenised to the ranker's length limits."""
    return inputs.load(collection, run_path, qids, depth, tokenizer, settings["max_query_len"],
                       settings["max_doc_len"])
