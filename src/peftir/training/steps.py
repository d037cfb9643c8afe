"""A fixed number of optimisation steps, as every system but the Semi-Siamese rankers trains (language and
ranking modules, pretraining, dense and SPLADE retrievers): AdamW, linear warm-up then linear decay to zero
(the Hugging Face Trainer's default schedule the authors' scripts use), no weight decay on biases and
LayerNorms, the gradient clipped to ``max_grad_norm`` (the Trainer's default 1.0) when given.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn
from transformers import get_linear_schedule_with_warmup

from ..execution.gradients import clip
from ..execution.seam import CPU, Execution
from .. import progress_log
from .finite import read_losses

NO_DECAY = ("bias", "LayerNorm.weight", "LayerNorm.bias")


def optimizer_groups(model: nn.Module, weight_decay: float, no_decay: tuple[str, ...] = NO_DECAY) -> list[dict]:
    """The trainable parameters in two AdamW groups: decayed, and those named ``no_decay`` (biases and
    LayerNorms by default; none: SPLADE's released optimiser decays everything)."""
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise ValueError("nothing to train: no parameter requires a gradient")
    kept = [p for n, p in trainable if no_decay and n.endswith(no_decay)]
    return [{"params": [p for n, p in trainable if not (no_decay and n.endswith(no_decay))],
             "weight_decay": weight_decay}, {"params": kept, "weight_decay": 0.0}]


def train_steps(model: nn.Module, loss_of: Callable[[int], Tensor], steps: int, lr: float, warmup: int = 0,
                weight_decay: float = 0.0, log_every: int = 0, max_grad_norm: float | None = None,
                execution: Execution | None = None) -> list[float]:
    """``steps`` updates of the model's trainable parameters on ``loss_of(step)``; the mean loss of each
    ``log_every`` steps (of all, when 0), printed to the job's log as it goes."""
    def update(step: int) -> Tensor:
        loss = loss_of(step)
        loss.backward()
        return loss.detach().double()

    return train_updates(model, update, steps, lr, warmup, weight_decay, log_every, max_grad_norm=max_grad_norm,
                         execution=execution)


def train_updates(model: nn.Module, update: Callable[[int], Tensor | float], steps: int, lr: float, warmup: int = 0,
                  weight_decay: float = 0.0, log_every: int = 0, no_decay: tuple[str, ...] = NO_DECAY,
                  after: Callable[[int], None] | None = None, max_grad_norm: float | None = None,
                  eps: float = 1e-8, execution: Execution | None = None) -> list[float]:
    """As ``train_steps``, for an objective that accumulates its own gradient (``update(step)`` runs the backward
    passes, a gradient cache's several, and returns the loss, a tensor on the device or a number); ``after(n)`` runs
    once ``n`` updates are applied (a validation); ``eps``: AdamW's (torch's and the Hugging Face Trainer's 1e-8 by
    default). The host reads the losses once per ``log_every`` steps: a step queues its work on a GPU without
    waiting for it; a non-finite one stops training there (``read_losses``). Each update runs in ``execution``'s
    ``training_step`` (TF32 where it chose bf16 on a GPU), ``after`` outside it: the model's own (``Execution.place``
    keeps it on the model) unless given, as for a part trained inside a placed model."""
    execution = execution or getattr(model, "execution", CPU)
    model.train()
    groups = optimizer_groups(model, weight_decay, no_decay)
    optimizer = torch.optim.AdamW(groups, lr=lr, eps=eps)
    schedule = get_linear_schedule_with_warmup(optimizer, min(warmup, steps), steps)
    window = log_every or steps
    losses, running = [], []
    progress_log.start("training steps", steps, "steps")
    for step in range(steps):
        with execution.training_step():
            optimizer.zero_grad(set_to_none=True)
            running.append(update(step))
            clip((p for group in groups for p in group["params"]), max_grad_norm)
            optimizer.step()
            schedule.step()
        progress_log.advance("training steps")
        if after is not None:
            after(step + 1)
        if len(running) == window or step == steps - 1:
            losses.append(sum(read_losses(running, step + 2 - len(running), f"step {{}} of {steps}")) / len(running))
            print(f"step {step + 1}/{steps}: loss {losses[-1]:.4f}", flush=True)
            running = []
    progress_log.finish("training steps")
    model.eval()
    return losses
