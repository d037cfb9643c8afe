"""A sentence-transformers model as a job runs it: placed by the job's execution, its batches through the seam.

``SentenceTransformer.encode`` moves its batches to the device the model chose for itself; jobs instead place the
model (``Execution.place``) and run its own tokenisation, modules and pooling (``tokenize``, ``forward``), so the
untrained backbone's reference row and the CLIR pre-ranker use the GPU, the precision and the threads the config
says, like every other model of the pipeline.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..contract.backbones import resolve
from ..execution.passes import Configured, Encoder, Shape
from ..execution.seam import Execution

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def sentence_encoder(path: str, execution: Execution, config_kwargs: dict | None = None) -> SentenceTransformer:
    """The sentence-transformers model at ``path`` (a name, pinned or not, or a directory), placed by
    ``execution``."""
    from sentence_transformers import SentenceTransformer

    return execution.place(SentenceTransformer(resolve(path), device="cpu", config_kwargs=config_kwargs))


@torch.inference_mode()
def embed(model: SentenceTransformer, texts: list[str], batch_size: Configured, max_length: int | None = None,
          normalise: bool = False) -> torch.Tensor:
    """The texts' sentence embeddings (fp32), as ``SentenceTransformer.encode`` computes them, longest texts first,
    cut to ``max_length`` tokens when given (the model's own limit otherwise), L2-normalised when asked; as many
    texts a pass as the execution decides for ``batch_size`` (``auto`` or a number; recorded as ``encode``)."""
    if max_length is not None:
        model.max_seq_length = max_length
    batch_size = model.execution.rows_per_pass("encode", batch_size, len(texts),
                                               Encoder.of(model[0].auto_model.config, model),
                                               Shape(model.max_seq_length, False))
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors = []
    for start in range(0, len(order), batch_size):
        features = model.execution.inputs(model.tokenize([texts[i] for i in order[start:start + batch_size]]))
        with model.execution.precision():
            vectors.append(model(features)["sentence_embedding"].float())
    embedded = torch.cat(vectors)[torch.argsort(torch.tensor(order))]
    return torch.nn.functional.normalize(embedded, dim=-1) if normalise else embedded
