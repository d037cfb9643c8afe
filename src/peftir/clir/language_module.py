"""Language modules by masked-language modelling on one language's text: a language adapter or a language SFTM.

One job per language and module kind, the ``mlm_language_adapter`` rule's. The
encoder stays frozen:

- ``adapter``: a Pfeiffer + NICE adapter (``peftir.clir.modular.language_adapter_config``) trained with
  ``train_adapter`` (AdapterHub leaves the MLM head's transform trainable and freezes the tied decoder, as
  the authors' adapter-transformers did for the transform); saved without the head, as the rankers load it;
- ``sftm``: a language mask by lottery-ticket sparse fine-tuning of the encoder (LayerNorms frozen, as the
  authors' ``--freeze_layer_norm``), K = the parameter count of the language adapter of the same reduction factor,
  L1 pull toward θ0 in both phases. ``freeze_decoder`` is composable-sft's ``--freeze_decoder``: the MLM decoder,
  tied to the word embeddings, is untied into a frozen copy, so the mask may change the input embeddings (rows of
  the language's own pieces above all) while the output side stays θ0's; without it the tied pair is maskable as
  one tensor.

Both report the held-out MLM loss and perplexity before and after, on the same masked tokens.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch

from ..data.text_units import unit_chunks
from ..execution.passes import Encoder, Shape
from ..execution.seam import Execution, Spec
from ..files import atomic_directory, scratch_directory, write_json
from . import modular
from .sparse_fine_tuning import lottery_ticket_sft
from ..training import mlm
from ..training.steps import train_updates

SFTM_FILE = "sftm.pt"


def _language_adapter(model, language: str, settings: dict) -> str:
    name = modular.language_adapter_name(language)
    model.add_adapter(name, config=modular.language_adapter_config(settings["reduction_factor"],
                                                                   settings["non_linearity"]))
    model.train_adapter(name)
    return name


def untie_decoder(model) -> None:
    """composable-sft's ``--freeze_decoder``: the MLM decoder gets a frozen copy of the word embeddings, so the
    embeddings can be masked and trained while the output projection stays θ0's."""
    decoder = model.get_output_embeddings()
    decoder.weight = torch.nn.Parameter(decoder.weight.detach().clone(), requires_grad=False)


def _sftm_parameters(model, settings: dict) -> tuple[list[str], list[str]]:
    """What a language mask may change (the encoder, word embeddings included; LayerNorms too unless frozen) and
    what is trained densely beside it (the MLM head's transform and bias, which composition leaves out:
    ``apply(with_abs=False)``). With ``freeze_decoder`` the decoder is untied first (``untie_decoder``)."""
    if settings["freeze_decoder"]:
        untie_decoder(model)
    decoder = model.get_output_embeddings().weight
    named = dict(model.named_parameters())
    maskable = modular.encoder_parameter_names(model, settings["freeze_layer_norm"])
    head = f"heads.{modular.MLM_HEAD}."
    dense = [n for n, p in named.items() if n.startswith(head) and p is not decoder]
    return maskable, dense


def _train(model, blocks: mlm.TokenBlocks, tokenizer, settings: dict, seed: int, steps: int, execution: Execution,
           regulariser=None) -> list[float]:
    """``steps`` MLM updates of ``settings['batch_size']`` blocks, accumulated as many blocks a pass as the execution
    decides for ``settings['chunk']`` (``auto`` or a number), plus the SFT regulariser when given."""
    batches = mlm.training_batches(blocks, settings["batch_size"], tokenizer, seed)
    rows = execution.rows_per_pass("train", settings["chunk"], settings["batch_size"], Encoder.of(model.config, model),
                                   Shape(settings["block_size"], True, heads=1))

    def update(step: int) -> torch.Tensor:
        loss = mlm.accumulated_mlm(model, next(batches), execution, rows)
        if regulariser is None:
            return loss
        penalty = regulariser()
        penalty.backward()
        return loss + penalty.detach().double()

    return train_updates(model, update, steps, settings["lr"], settings.get("warmup", 0),
                         settings.get("weight_decay", 0.0), log_every=max(1, steps // 10),
                         max_grad_norm=settings["max_grad_norm"], execution=execution)


def train_language_module(backbone: str, corpus: str, heldout: str, language: str, kind: str, settings: dict,
                          seed: int, execution: Spec, threads: int, output: str, summary: str) -> dict:
    """One language module (``kind``: adapter or sftm) trained by MLM on ``corpus`` (its token ids on disk
    beside ``output`` while the job runs), where ``execution`` says, written to the directory ``output`` (an
    AdapterHub adapter, or ``sftm.pt``), and ``summary``."""
    execution = Execution.of(execution, threads)
    torch.manual_seed(seed)
    model, tokenizer = modular.load_encoder(backbone, with_mlm_head=True, pooler=False)
    with scratch_directory(output) as scratch:
        blocks = mlm.write_blocks(tokenizer, unit_chunks([corpus]), settings["block_size"], scratch / "train.ids",
                                  group=mlm.RUN_MLM_GROUP)
        held = mlm.heldout_batches(mlm.write_blocks(tokenizer, unit_chunks([heldout]), settings["block_size"],
                                                    scratch / "heldout.ids", settings["heldout_blocks"],
                                                    group=mlm.RUN_MLM_GROUP),
                                   settings["batch_size"], tokenizer)
        started = time.monotonic()
        facts: dict = {"language": language, "kind": kind, "seed": seed, "training_blocks": len(blocks),
                       "block_size": settings["block_size"]}
        if kind == "adapter":
            name = _language_adapter(model, language, settings)
            execution.place(model)
            facts["heldout_before"] = mlm.heldout_loss(model, held, execution)  # the adapter starts near the identity
            facts["losses"] = _train(model, blocks, tokenizer, settings, seed, settings["steps"], execution)
            facts["parameters"] = modular.adapter_parameters(model, name)
            facts["heldout_after"] = mlm.heldout_loss(model, held, execution)
            with atomic_directory(output) as building:
                model.save_adapter(str(building), name, with_head=False)
        else:
            execution.place(model)
            facts["heldout_before"] = mlm.heldout_loss(model, held, execution)
            maskable, dense = _sftm_parameters(model, settings)
            modular.freeze_all_but(model, set(maskable + dense))
            k = modular.adapter_size(model, modular.language_adapter_config(settings["reduction_factor"]))
            phases = settings["phase_steps"]
            sft, facts["sft"] = lottery_ticket_sft(
                model, maskable, dense, k,
                lambda phase, regulariser: _train(model, blocks, tokenizer, settings, seed + phase, phases[phase - 1],
                                                  execution, regulariser),
                l1=(settings["l1"], settings["l1"]))
            facts["parameters"] = k
            facts["heldout_after"] = mlm.heldout_loss(model, held, execution)
            with atomic_directory(output) as building:
                sft.save(Path(building) / SFTM_FILE)
    facts["seconds"] = round(time.monotonic() - started, 1)
    facts["execution"] = execution.used()
    write_json(summary, facts)
    return facts
