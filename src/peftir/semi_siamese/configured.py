"""A ranker as a run configures it: backbone, ranker, fine-tuning method attached, placed by the job's execution; its
data.

What the training and the reranking of one run (and UNM's denoising reranker) share, so all build the same model the
same way. A method arrives resolved (``peftir.semi_siamese.contract.resolve_method``): its parts, each naming the
builder module of ``peftir.semi_siamese.methods`` that attaches it (``full``, ``prompt``, ``prefix``, ``lora``,
``ss_prefix``, ``ss_lora``) and its settings. In a sequential hybrid the first part is loaded from its own run
afterwards and stays frozen (``learned.load_first_stage``); only the second trains. The ranker head (everything
outside ``ranker.bert``) always trains at the head learning rate.
"""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..execution.seam import Execution
from ..models import backbone, inputs
from ..models.learned import learned_parameters
from . import rankers as models
from .methods import full, lora, prefix, prompt, ss_lora, ss_prefix
from .methods.base import ParamGroups

BUILDERS: dict[str, Callable[[models.Ranker, dict, dict], ParamGroups]] = {
    "full": full.build, "prompt": prompt.build, "prefix": prefix.build, "lora": lora.build,
    "ss_prefix": ss_prefix.build, "ss_lora": ss_lora.build,
}


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


def apply(ranker: models.Ranker, method: dict, lr: dict) -> ParamGroups:
    """Attach ``method``'s parts to ``ranker`` in place; the Adam groups of what trains, the head's included."""
    if method["bi_encoder_only"] and not ranker.bi_encoder:
        raise ValueError(f"{method['name']} is semi-Siamese: it applies to bi-encoders (twinbert, colbert) only")
    groups: ParamGroups = []
    for index, part in enumerate(method["parts"]):
        if index and method["sequential"]:   # the first part is loaded from its own run and frozen
            for parameter in learned_parameters(ranker).values():
                parameter.requires_grad_(False)
            groups = []
        groups += BUILDERS[part["builder"]](ranker, part["settings"], lr)
    for parameter in ranker.head_parameters():
        parameter.requires_grad_(True)
    return groups + [{"params": ranker.head_parameters(), "lr": lr["ranker"]}]


def saved_weights(path: str | Path, ranker: models.Ranker) -> dict:
    """A run's weights file (``{"state": tensors, "epoch": n}``), on the ranker's device; tensors only."""
    return torch.load(path, map_location=ranker.execution.device, weights_only=True)


def ranking_data(collection: inputs.Collection, run_path: str, qids: list[str], depth: int, tokenizer,
                 settings: dict, keep_docs: bool = True) -> inputs.RankingData:
    """The ``qids``' queries and top-``depth`` candidates, tokenised to the ranker's length limits (the
    documents' word pieces kept for reuse unless ``keep_docs`` is False: scored once)."""
    return inputs.load(collection, run_path, qids, depth, tokenizer, settings["max_query_len"],
                       settings["max_doc_len"], keep_docs)
