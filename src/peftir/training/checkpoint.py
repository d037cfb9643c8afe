"""A training job's state between epochs, so a killed job resumes where it stopped.

The checkpoint holds the learned weights, the optimizer, every RNG state (sampling, Python,
NumPy, torch, CUDA), the epoch, the history and the best epoch so far; it is written atomically
and keyed by the job, so one left by a job whose settings have since changed is ignored.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

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
        state = torch.load(self.path, map_location="cpu", weights_only=False)
        return state if state.get("key") == self.key else None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def rng_states(rng: random.Random) -> dict:
    states = {"sampling": rng.getstate(), "python": random.getstate(), "numpy": np.random.get_state(),
              "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(rng: random.Random, states: dict) -> None:
    rng.setstate(states["sampling"])
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


