"""One pretraining run for dense retrieval: Condenser, coCondenser, RIP or ICT on a collection's text.

The backbone is a masked LM (its MLM head fitted first where the checkpoint has none, as the embedded MiniLM);
the objectives are ``peftir.dense.pretraining.condenser`` (head MLM + late MLM), coCondenser (the same plus the
span-contrastive loss, warm-started from a Condenser with its head) and ``peftir.dense.pretraining.rip`` (MLM +
sentence-contrastive loss); ``peftir.dense.pretraining.ict`` (the Inverse Cloze Task, contrastive only, inputs
unmasked) is the Condenser paper's ICT baseline. Inputs are masked by whole words, 15 % (80/10/10), as the
released collator does; the schedule is the papers' (AdamW, linear warm-up over ``warmup_ratio`` of the steps,
linear decay, weight decay 0.01). The run writes the backbone as a plain checkpoint that any stage can name (the
Condenser head beside it, for coCondenser) and a summary with the losses; a RIP run with ``prompts`` trains and
writes deep prompts only (``peftir.dense.pretraining.prompt_pretraining``), for a DPT retriever to start from.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Iterable, Iterator

import torch
from torch import Tensor
from transformers import AutoModelForMaskedLM, AutoTokenizer, PreTrainedModel

from ...data import pretraining_text
from ...data.text_units import TextUnits
from ...execution.gradients import accumulate, cached_gradient, split
from ...execution.passes import Encoder, Shape
from ...execution.seam import Execution
from ...files import atomic_directory, scratch_directory, write_json
from ..contract import PRETRAINING_UNITS
from ...contract.backbones import resolve
from ...training.mlm import MLM_PROBABILITY, shuffled_batches
from ...training.steps import train_updates
from .condenser import Condenser
from .contrastive import inverse_cloze_loss, pair_contrastive_loss
from .ict import InverseCloze, Unmasked, cloze_pairs, wrapped_batch
from .prompt_pretraining import PromptedRetrievalLM
from .rip import RetrievalOrientedLM

OBJECTIVES = ("condenser", "cocondenser", "rip", "ict")


class Masking:
    """Rows of word-piece ids (no special tokens) → a padded batch with whole-word masks and its attention mask.

    The released collator's rule (``DataCollatorForWholeWordMask``, BERT's ``create_pretraining_data``), kept here
    because transformers 4.57 deprecates that collator for a whole-word option with another rule (each word masked
    with probability 15 %, words read from the raw text's offsets, which blocks of ids no longer have). A row's
    words are its pieces grouped by ``##`` continuations, pieces spelled ``[CLS]`` or ``[SEP]`` starting none (the
    collator compares the strings, so RoBERTa's ``<s>`` and ``</s>`` are words of the draw: they count towards the
    15 % and are then left unmasked, as there); the words are taken in a random order until 15 % of the row's tokens
    (rounded, at least one) are covered, a word that would overshoot skipped; special tokens are never masked; of
    the masked tokens 80 % become the mask token, 10 % a random piece, 10 % stay. The draws come from one generator
    seeded with ``seed``, in the collator's order, so a seed gives the collator's masks, with BERT's and RoBERTa's
    tokenizers (``test_pretraining``); seed 0 too, which the collator (``if self.seed``) drew from torch's global
    generator instead. A RoBERTa tokenizer has no ``##`` pieces: its masking is by token, as RoBERTa's own MLM."""

    REPLACED, RANDOM = 0.8, 0.5        # of the masked tokens 80 % the mask token, then half the rest a random piece

    def __init__(self, tokenizer, seed: int) -> None:
        self.tokenizer = tokenizer
        self.generator = torch.Generator().manual_seed(seed)
        pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self.continues = frozenset(piece for piece, spelled in enumerate(pieces) if spelled.startswith("##"))
        self.special = torch.zeros(len(tokenizer), dtype=torch.bool)
        self.special[tokenizer.all_special_ids] = True
        self.starts_none = {piece for piece, spelled in enumerate(pieces) if spelled in ("[CLS]", "[SEP]")}

    def whole_words(self, row: list[int]) -> Tensor:
        """Which of a wrapped row's positions its whole-word draw covers (special tokens not yet left out)."""
        words: list[list[int]] = []
        for position, piece in enumerate(row):
            if piece in self.starts_none:
                continue
            if words and piece in self.continues:
                words[-1].append(position)
            else:
                words.append([position])
        budget = min(512, max(1, round(len(row) * MLM_PROBABILITY)))
        covered: list[int] = []
        for word in torch.randperm(len(words), generator=self.generator).tolist():
            if len(covered) >= budget:
                break
            if len(covered) + len(words[word]) <= budget:
                covered += words[word]
        chosen = torch.zeros(len(row), dtype=torch.bool)
        chosen[covered] = True
        return chosen

    def __call__(self, rows: list[list[int]]) -> dict[str, Tensor]:
        batch = wrapped_batch(self.tokenizer, rows)
        ids = batch["input_ids"]
        masked = torch.zeros_like(ids, dtype=torch.bool)
        for index, (row, length) in enumerate(zip(ids.tolist(), batch["attention_mask"].sum(dim=1).tolist())):
            masked[index, :length] = self.whole_words(row[:length])
        masked &= ~self.special[ids]
        replaced = torch.bernoulli(torch.full(ids.shape, self.REPLACED), generator=self.generator).bool() & masked
        randomised = (torch.bernoulli(torch.full(ids.shape, self.RANDOM), generator=self.generator).bool() & masked
                      & ~replaced)
        pieces = torch.randint(len(self.tokenizer), ids.shape, dtype=torch.long, generator=self.generator)
        inputs = torch.where(replaced, self.tokenizer.mask_token_id, torch.where(randomised, pieces, ids))
        return {"input_ids": inputs, "attention_mask": batch["attention_mask"],
                "labels": torch.where(masked, ids, torch.full_like(ids, -100))}


def _model(objective: str, lm: PreTrainedModel, settings: dict, warm_start: str | None,
           prompts: dict | None = None) -> torch.nn.Module:
    if objective == "rip":        # the backbone pretrained, or with ``prompts`` only deep prompts on it (Table 6)
        return PromptedRetrievalLM(lm, prompts["length"], prompts["dropout"]) if prompts else RetrievalOrientedLM(lm)
    if objective == "ict":
        return InverseCloze(lm)
    model = Condenser(lm, settings["skip_from"], settings["head_layers"], settings["late_mlm"])
    if objective == "cocondenser":
        model.load_head(warm_start)
    return model


def _documents(objective: str, tokenizer, texts: Iterable[str], settings: dict) -> Iterator[list[list[int]]]:
    """The training units (``settings['units']``) as documents of rows: Condenser's blocks (each alone: blocks are
    drawn one by one), coCondenser's documents as their spans, or passages as their sentences (RIP's, ICT's;
    DPTDR's coCondenser)."""
    window, units = settings.get("window_words"), settings.get("units") or PRETRAINING_UNITS[objective][0]
    if units == "blocks":
        return ([block] for block in pretraining_text.blocks(tokenizer, texts, settings["max_len"],
                                                              settings["short_probability"], settings["seed"], window))
    if units == "spans":
        return pretraining_text.spans(tokenizer, texts, settings["max_len"])
    return pretraining_text.sentences(tokenizer, texts, settings["max_len"], window)


def _batches(objective: str, pieces: pretraining_text.Pieces, batch_size: int, masking: Masking | Unmasked,
             seed: int):
    """Masked batches forever, the units in a seeded order reshuffled each pass: ``batch_size`` blocks
    (Condenser), or two spans / sentences of each of ``batch_size`` texts side by side (coCondenser, RIP), or a
    sentence and its context from each of ``batch_size`` passages, unmasked (ICT)."""
    rng = random.Random(seed)
    for indices in shuffled_batches(len(pieces), batch_size, rng):
        chosen = [pieces.document(i) for i in indices]
        if objective == "ict":
            yield masking(cloze_pairs(chosen, rng))
            continue
        yield masking([rows[0] for rows in chosen] if objective == "condenser" else pretraining_text.pairs(chosen, rng))


def pretraining_update(objective: str, model: torch.nn.Module, execution: Execution,
                       chunk: int) -> Callable[[dict[str, Tensor]], Tensor]:
    """One update's backward passes on a masked batch, ``chunk`` rows per forward: Condenser's two MLM losses are
    means over the batch's rows, so its gradient accumulates over chunks (as the released code accumulates);
    coCondenser's, RIP's and ICT's contrastive loss couples every row, so theirs goes through a gradient cache, the
    MLM loss of each chunk weighted by its share of the rows (ICT has none). Returns the loss."""
    def forward(part: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        with execution.precision():
            loss, cls = model(**execution.inputs(part))
        return loss, cls.float()

    def update(batch: dict[str, Tensor]) -> Tensor:
        parts = split(batch, chunk)
        if objective == "condenser":
            return accumulate(parts, lambda part: forward(part)[0])

        def represent(weighted: tuple[dict[str, Tensor], float]) -> tuple[Tensor, Tensor]:
            mlm, cls = forward(weighted[0])
            return mlm * weighted[1], cls

        contrastive = inverse_cloze_loss if objective == "ict" else pair_contrastive_loss
        return cached_gradient(execution, parts, represent, lambda vectors: contrastive(torch.cat(vectors)))

    return update


def pretraining_rows(objective: str, lm: PreTrainedModel, model: torch.nn.Module, execution: Execution,
                     settings: dict) -> int:
    """Rows per forward pass: the execution's decision for ``settings['chunk']`` (``auto`` or a number), recorded as
    ``train``. A row is a block or a span of ``max_len`` tokens (two per text but for Condenser's), through the
    backbone and, for Condenser and coCondenser, the head's layers, with two MLM logits (the head's and the late
    one), RIP's one, ICT's none."""
    rows = settings["batch_size"] * (1 if objective == "condenser" else 2)
    condenser = objective in ("condenser", "cocondenser")
    heads = {"condenser": 1 + bool(settings["late_mlm"]), "cocondenser": 1 + bool(settings["late_mlm"]),
             "rip": 1, "ict": 0}[objective]
    encoder = Encoder.of(lm.config, model, extra_layers=settings["head_layers"] if condenser else 0)
    return execution.rows_per_pass("train", settings["chunk"], rows, encoder, Shape(settings["max_len"], True, heads))


def pretrain(objective: str, backbone: str, texts: Iterable[str], settings: dict, output_dir: str, summary: str,
             execution: Execution, warm_start: str | None = None, prompts: dict | None = None) -> dict:
    """The ``pretrain`` rule: ``settings['steps']`` updates of ``objective`` on ``texts`` from ``backbone`` (a
    coCondenser from the Condenser in ``warm_start``; RIP with ``prompts``, of deep prompts alone on the frozen
    backbone), placed by ``execution``; the backbone (or the prompts) saved to ``output_dir``, the losses to
    ``summary`` (with how many texts were left out for holding no text, when ``texts`` is a ``TextUnits``). The
    texts' training units are cut and tokenised once, to disk beside ``output_dir`` (``pretraining_text.Pieces``),
    and read a batch at a time."""
    if objective not in OBJECTIVES:
        raise ValueError(f"pretraining objective {objective!r}: one of {', '.join(OBJECTIVES)}")
    if (objective == "cocondenser") != bool(warm_start):
        raise ValueError("a coCondenser starts from a Condenser run (warm_start), and only a coCondenser does")
    if prompts and objective != "rip":
        raise ValueError(f"deep prompts pretrain with RIP (DPTDR Table 6), not {objective}")
    torch.manual_seed(settings["seed"])
    started = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(warm_start or backbone)
    lm = AutoModelForMaskedLM.from_pretrained(warm_start or backbone)
    model = execution.place(_model(objective, lm, settings, warm_start, prompts))
    with scratch_directory(output_dir) as scratch:
        pieces = pretraining_text.Pieces.write(_documents(objective, tokenizer, texts, settings), scratch)
        if len(pieces) < settings["batch_size"]:
            raise ValueError(f"{objective}: {len(pieces)} training units, fewer than a batch of "
                             f"{settings['batch_size']}")
        collate = Unmasked(tokenizer, settings["max_len"]) if objective == "ict" else Masking(tokenizer,
                                                                                               settings["seed"])
        batches = _batches(objective, pieces, settings["batch_size"], collate, settings["seed"])
        update = pretraining_update(objective, model, execution, pretraining_rows(objective, lm, model, execution,
                                                                                  settings))
        steps = settings["steps"]
        losses = train_updates(model, lambda step: update(next(batches)), steps, settings["lr"],
                               round(settings["warmup_ratio"] * steps), settings["weight_decay"],
                               log_every=max(1, steps // 10), max_grad_norm=settings["max_grad_norm"])
        units = len(pieces)
    with atomic_directory(output_dir) as building:
        model.save(building, tokenizer)
    facts = {"objective": objective, "backbone": backbone, "warm_start": warm_start, **settings,
             **({"prompts": prompts} if prompts else {}),
             "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
             "training_units": units, **({"empty_texts_dropped": texts.empty} if isinstance(texts, TextUnits) else {}),
             "losses": losses, "seconds": round(time.monotonic() - started, 1), "execution": execution.used()}
    write_json(summary, facts)
    return facts


# what a run's params hand to ``pretrain``: the units too (DPTDR's coCondenser on sentences, its Table 7 on spans)
SETTINGS = ("units", "max_len", "short_probability", "window_words", "batch_size", "chunk", "steps", "lr",
            "warmup_ratio", "weight_decay", "max_grad_norm", "skip_from", "head_layers", "late_mlm", "seed")


def pretrain_run(spec: dict, docs: str, output_dir: str, summary: str, threads: int, start: str | None = None,
                 warm_start: str | None = None) -> dict:
    """The ``pretrain`` rule: the run ``spec`` (the ``pretraining`` param) on the documents of ``docs``, from the
    checkpoint ``start`` (the backbone with its fitted MLM head) or the named backbone, or a coCondenser from
    the Condenser in ``warm_start``; deep prompts alone where the run names ``prompts``."""
    return pretrain(spec["objective"], start or resolve(spec["backbone"]), TextUnits([docs]),
                    {key: spec[key] for key in SETTINGS}, output_dir, summary, Execution.of(spec["execution"], threads),
                    warm_start, spec.get("prompts"))
