"""DPTDR Table 6: RIP training deep prompts alone on a frozen backbone, and DPT retrievers that start from them."""
from __future__ import annotations

import pytest
import torch
from peft import load_peft_weights
from transformers import BertForMaskedLM

from peftir.execution.seam import CPU
from peftir.dense.deep_prompt import ADAPTER
from peftir.dense.pretraining.prompt_pretraining import PromptedRetrievalLM
from peftir.dense.pretraining.retrieval_pretraining import pretrain, pretraining_update
from peftir.retrieval.dense_retriever import PASSAGE
from peftir.training.steps import train_updates
from peftir.dense.train import build_retriever
from test_pretraining import PASSAGES, PRETRAINING
from tiny import tiny_backbone

LENGTH = 4
SETTINGS = {"q_max_len": 8, "p_max_len": 16}
DPT = {"name": "dpt", "lr": 1e-2, "length": LENGTH, "reparametrise": False, "mlp_hidden": 16, "dropout": 0.1}
PRETRAINED = {**DPT, "prompts": "pretrained:rip-prompts"}
TEXTS = ["deep prompts for dense retrieval", "a frozen backbone"]


@pytest.fixture(scope="module")
def masked_lm(tmp_path_factory) -> str:
    """A tiny masked LM checkpoint with a tokenizer: the backbone prompts pretrain on and retrievers run on."""
    path = tmp_path_factory.mktemp("lm")
    loaded = tiny_backbone()
    torch.manual_seed(0)
    BertForMaskedLM(loaded.model.config).save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return str(path)


def _prompts(model) -> torch.Tensor:
    return model.prompt_encoder[ADAPTER].embedding.weight


def _masked_batch(tokenizer) -> dict[str, torch.Tensor]:
    batch = tokenizer(["one sentence of a passage", "its other sentence", "another passage", "and its pair"],
                      padding=True, return_tensors="pt")
    labels = torch.full_like(batch["input_ids"], -100)
    labels[:, 1] = batch["input_ids"][:, 1]
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], "labels": labels}


def test_prompt_pretraining_trains_the_prompts_alone_and_a_retriever_starts_from_them(masked_lm, tmp_path):
    lm = BertForMaskedLM.from_pretrained(masked_lm)
    frozen = {name: p.detach().clone() for name, p in lm.named_parameters()}
    model = PromptedRetrievalLM(lm, LENGTH, dropout=0.1)
    start = _prompts(model.encoder).detach().clone()
    batch = _masked_batch(build_retriever(masked_lm, None, {"name": "ft"}, SETTINGS).tokenizer)
    update = pretraining_update("rip", model, CPU, chunk=2)          # contrastive + MLM through the gradient cache
    train_updates(model, lambda step: update(batch), 1, lr=1e-2)
    assert all(torch.equal(p, frozen[name]) for name, p in lm.named_parameters())   # encoder and MLM head unchanged
    assert not torch.equal(_prompts(model.encoder), start)
    model.train()                                    # saved in eval mode: the prompt dropout stays out of the file
    model.save(tmp_path / "prompts", tokenizer=None)
    assert not (tmp_path / "prompts" / "config.json").exists() and model.training

    retriever = build_retriever(masked_lm, None, PRETRAINED, SETTINGS, prompts=str(tmp_path / "prompts"))
    assert torch.equal(_prompts(retriever.encoder), _prompts(model.encoder))
    assert [name for name, p in retriever.named_parameters() if p.requires_grad] == \
        [f"encoder.prompt_encoder.{ADAPTER}.embedding.weight"]
    random = build_retriever(masked_lm, None, DPT, SETTINGS).eval()
    with torch.no_grad():                            # step 0: the pretrained start is not a random one
        moved = retriever.eval().encode(TEXTS, PASSAGE) - random.encode(TEXTS, PASSAGE)
    assert moved.abs().max() > 1e-4
    with pytest.raises(ValueError, match="4 embeddings; the retriever asks for 8"):
        build_retriever(masked_lm, None, {**PRETRAINED, "length": 8}, SETTINGS, prompts=str(tmp_path / "prompts"))
    with pytest.raises(ValueError, match="names pretrained prompts 'pretrained:rip-prompts', given None"):
        build_retriever(masked_lm, None, PRETRAINED, SETTINGS)


def test_a_prompt_run_saves_only_its_prompts_and_pretrains_with_rip_only(masked_lm, tmp_path):
    facts = pretrain("rip", masked_lm, PASSAGES, PRETRAINING, str(tmp_path / "run"), str(tmp_path / "run.json"), CPU,
                     prompts={"length": LENGTH, "dropout": 0.1})
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.suffix != ".md") == \
        ["adapter_config.json", "adapter_model.safetensors"]
    assert facts["trainable_parameters"] == 2 * 2 * 32 * LENGTH and facts["prompts"]["length"] == LENGTH
    encoder = build_retriever(masked_lm, None, PRETRAINED, SETTINGS, prompts=str(tmp_path / "run")).encoder
    assert torch.equal(_prompts(encoder), load_peft_weights(str(tmp_path / "run"))["prompt_embeddings"])
    with pytest.raises(ValueError, match="deep prompts pretrain with RIP"):
        pretrain("condenser", masked_lm, PASSAGES, PRETRAINING, str(tmp_path / "x"), str(tmp_path / "x.json"), CPU,
                 prompts={"length": LENGTH, "dropout": 0.1})
