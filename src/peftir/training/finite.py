"""Losses read back from the device, refused when one is not a finite number.

A diverged step (a bf16 overflow, a learning rate too high) turns the loss into NaN or infinity, and every weight
after it; training on would write weights whose scores rank at random and print plausible metrics. The loops keep
each step's loss on the device and read a window of them in one transfer (no host synchronisation inside a step),
so the check costs nothing more than the logging already did, and names the first step that diverged.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor

from ..errors import ActionableError


class NonFiniteLossError(ActionableError):
    """A training step's loss is NaN or infinite: the job stops, naming the step, and writes no weights."""


def read_losses(losses: Sequence[Tensor | float], first: int, what: str) -> list[float]:
    """The losses of consecutive steps (``first`` is the first one's number, counted from 1) as numbers, read in
    one transfer; ``what`` names a step for the message, its number in braces ("step {} of 500", "epoch 3, batch
    {}")."""
    values = torch.stack([torch.as_tensor(loss, dtype=torch.float64).detach().reshape(()) for loss in losses])
    values = values.cpu().tolist()
    for offset, value in enumerate(values):
        if not math.isfinite(value):
            raise NonFiniteLossError(f"training stopped: the loss of {what.format(first + offset)} is {value} (not a "
                                     f"finite number); the model diverged (learning rate, precision or inputs), "
                                     f"and no weights are written")
    return values
