"""A training job's state between epochs, so a killed job resumes where it stopped.

The checkpoint holds the learned weights, the optimizer, every RNG state (sampling, Python,
NumPy, torch, CUDA), the epoch, the history and the best epoch so far; it is written atomically
and keyed by the job, so one left by a job whose settings have since changed is ignored. It holds
tensors and plain Python values only, so it loads with ``weights_only=True``: reading a checkpoint
never runs code a tampered file could carry.
"""
from __future__ import annotations

import pickle
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import ActionableError
from ..files import atomic_write


@dataclass
class Checkpoint:
    """Where a job keeps its training state between epochs, and what it must match to be resumed.

    ``key`` identifies the job's settings (params, inputs): a checkpoint left by a job whose
    settings have since changed is ignored rather than resumed.
    """

    path: Path
    key: str

    def save(self, state: dict) -> None:
        with atomic_write(self.path, "wb") as handle:
            torch.save({"key": self.key, **state}, handle)

    def load(self) -> dict | None:
        """The saved state (on the CPU: RNG states must stay there), or None if absent or of other settings."""
        if not self.path.exists():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as refused:
            raise ActionableError(f"{self.path} holds more than tensors and plain values, so it was not made by "
                                  f"this pipeline and is not loaded; delete it to train from the start "
                                  f"({str(refused).splitlines()[0]})") from None
        return state if state.get("key") == self.key else None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def rng_states(rng: random.Random) -> dict:
    name, key, position, has_gauss, gauss = np.random.get_state()
    states = {"sampling": rng.getstate(), "python": random.getstate(),
              "numpy": (name, key.tolist(), position, has_gauss, gauss), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(rng: random.Random, states: dict) -> None:
    rng.setstate(states["sampling"])
    random.setstate(states["python"])
    name, key, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((name, np.array(key, dtype=np.uint32), position, has_gauss, gauss))
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


