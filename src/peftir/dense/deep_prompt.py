"""Deep prompt tuning of a dense retriever's encoder (DPTDR; P-tuning v2), through peft's prefix tuning.

P-tuning v2 as DPTDR's released code has it (REFERENCE ``reference/dptdr.md``, §3): every layer's
self-attention gets ``length`` learned keys and values (``past_key_values``), the attention mask is widened
by ``length`` ones, no tokens are added to the output sequence, and the backbone is frozen. The prompts are
an ``Embedding(length, 2·layers·hidden)`` by default, or (``reparametrise``) generated from an
``Embedding(length, hidden)`` by ``Linear(hidden, mlp_hidden) → Tanh → Linear(mlp_hidden, 2·layers·hidden)``.

peft's ``PrefixTuningConfig`` (``prefix_projection`` False / True) is exactly these two encoders, with the
same N(0, 1) start; it lacks one part, P-tuning v2's dropout on the prompts (``hidden_dropout_prob``, 0.1),
which a forward hook on peft's prompt encoder adds here (active only in training, as the module's own
dropout would be). As in the released code (transformers 4.9.2), the encoder's position ids start after the
prompts (BERT offsets them by the cache length); ``max_position_embeddings`` must cover ``length`` plus
the longest input.
"""
from __future__ import annotations

from torch import nn
from torch.nn import functional as F
from peft import (PeftConfig, PeftModel, PrefixTuningConfig, TaskType, get_peft_model, load_peft_weights,
                  set_peft_model_state_dict)
from transformers import PreTrainedModel

ADAPTER = "default"        # peft's name of the one prompt set


def deep_prompts(encoder: PreTrainedModel, length: int, reparametrise: bool, mlp_hidden: int | None,
                 dropout: float, start: str | None = None) -> PeftModel:
    """``encoder`` frozen, with trainable deep prompts of ``length`` in every layer (peft prefix tuning): fresh
    (N(0, 1)), or ``start``'s, prompts a prompt-pretraining run saved (DPTDR §3.2 "pre-train deep prompts",
    Table 6). peft loads a saved prefix for inference only (``PeftModel.from_pretrained`` refuses to make prompts
    trainable), so the pretrained values go into a fresh trainable prefix; it saves a reparametrised prefix as the
    values its MLP generated, which cannot train again as an MLP, so pretrained prompts are embeddings."""
    if length + 2 > encoder.config.max_position_embeddings:
        raise ValueError(f"prompt length {length} leaves no positions of the encoder's "
                         f"{encoder.config.max_position_embeddings} for the text")
    config = PrefixTuningConfig(task_type=TaskType.FEATURE_EXTRACTION, num_virtual_tokens=length,
                                prefix_projection=reparametrise, encoder_hidden_size=mlp_hidden)
    model = get_peft_model(encoder, config)
    if start is not None:
        saved = PeftConfig.from_pretrained(start)
        if reparametrise or saved.prefix_projection or saved.num_virtual_tokens != length:
            raise ValueError(f"pretrained prompts {start}: {saved.num_virtual_tokens} embeddings; the retriever "
                             f"asks for {length}{' reparametrised' if reparametrise else ''}")
        set_peft_model_state_dict(model, load_peft_weights(start))
    if dropout:
        model.prompt_encoder[ADAPTER].register_forward_hook(_dropout(dropout))
    return model


def _dropout(rate: float):
    def hook(module: nn.Module, args: tuple, output):
        return F.dropout(output, rate, module.training)
    return hook


def prompt_length(model: nn.Module) -> int:
    """The deep prompts' length of a prompted encoder (each layer's keys and values gain as many positions), 0 for a
    plain one."""
    return model.peft_config[ADAPTER].num_virtual_tokens if isinstance(model, PeftModel) else 0


def prompt_values(model: PeftModel) -> int:
    """The prompt values every layer attends to, 2 · layers · hidden · length: what remains after training
    (with reparametrisation, the MLP that generates them is not counted; the paper's 0.1–0.4 % convention)."""
    config = model.peft_config[ADAPTER]
    return config.num_virtual_tokens * config.num_layers * 2 * config.token_dim


def trainable(model: nn.Module) -> int:
    """Parameters that train (with reparametrisation, the embedding and the MLP)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
