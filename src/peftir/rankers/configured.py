"""A ranker as a run configures it: backbone, ranker, fine-tuning method, device and precision; and its data.

What the training and the reranking of one run share, so both build the same model the same way.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch
from torch import nn

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


def autocast_dtype(precision: str, on: torch.device) -> torch.dtype | None:
    """The encoder's autocast type: bf16 on a CUDA GPU that has it when ``precision`` is bf16, with TF32
    for the matrix products that stay fp32; None (fp32) otherwise, on CPUs too, where bf16 is slow on
    most processors and would change numbers for no gain."""
    if precision != "bf16" or on.type != "cuda" or not torch.cuda.is_bf16_supported():
        return None
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    return torch.bfloat16


def placed(model: nn.Module, execution: dict | None) -> nn.Module:
    """``model`` on the device and with the encoder's autocast that ``execution`` names (``{"device": ...,
    "precision": ...}``; None: the CPU in fp32); the model keeps its autocast type in ``model.autocast``."""
    execution = execution or {"device": "cpu", "precision": "fp32"}
    on = device(execution["device"])
    model.autocast = autocast_dtype(execution["precision"], on)
    return model.to(on)


def configured_ranker(name: str, backbone_settings: dict, settings: dict, method: dict, lr: dict, execution: dict,
                      threads: int) -> tuple[models.Ranker, ParamGroups, object]:
    """Backbone + ranker ``name`` + ``method`` (resolved), on the device and in the precision ``execution``
    names (``{"device": ..., "precision": ...}``); callers seed first.

    Returns the ranker, the Adam groups of what trains and the tokenizer.
    """
    torch.set_num_threads(threads)
    loaded = backbone.load(backbone_settings["name"], backbone_settings["layers"])
    ranker = models.build(name, loaded.model, loaded.tokenizer, settings)
    groups = apply(ranker, method, lr)
    return placed(ranker, execution), groups, loaded.tokenizer


def execution_used(ranker: models.Ranker) -> dict:
    """Where and in which precision the ranker actually runs (what ``execution: auto/bf16`` became here)."""
    return {"device": ranker.device.type, "precision": "bf16" if ranker.autocast == torch.bfloat16 else "fp32"}


def saved_weights(path: str | Path, ranker: models.Ranker) -> dict:
    """A run's weights file (``{"state": tensors, "epoch": n}``), on the ranker's device; tensors only."""
    return torch.load(path, map_location=ranker.device, weights_only=True)


def ranking_data(collection: inputs.Collection, run_path: str, qids: list[str], depth: int, tokenizer,
                 settings: dict, keep_docs: bool = True) -> inputs.RankingData:
    """The ``qids``' queries and top-``depth`` candidates, tokenised to the ranker's length limits (the
    documents' word pieces kept for reuse unless ``keep_docs`` is False: scored once)."""
    return inputs.load(collection, run_path, qids, depth, tokenizer, settings["max_query_len"],
                       settings["max_doc_len"], keep_docs)
