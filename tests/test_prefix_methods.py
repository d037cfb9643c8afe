"""Prompt-, prefix-tuning, LoRA++ and the concurrent hybrid: wiring, frozen weights, parameter counts."""
import pytest
import torch
from transformers.models.bert.modeling_bert import BertConfig

from peftir import backbone, methods, rankers
from peftir.tables import format_count

from tiny import SETTINGS, backbone_weights, tiny_ranker

LR = {"ranker": 1e-2, "bert": 1e-2, "peft": 1e-2}
LORA = {"rank": 16, "alpha": 32, "dropout": 0.0, "target_modules": ["query", "value"], "scaling": "alpha_over_r"}
PREFIX = {"length": 10, "bottleneck": 256, "kind": "hidden"}
SETTINGS_OF = {
    "prompt": {"length": 10, "bottleneck": 256},
    "prefix": PREFIX,
    "lora": LORA,
    "lora_pp": {**LORA, "target_modules": ["query", "value", "attention.output.dense"]},
    "prefix_lora": {"prefix": PREFIX, "lora": LORA},
}


@pytest.mark.parametrize("method, count, printed", [
    ("prompt", 7_680, "8K"), ("prefix", 92_160, "0.1M"), ("lora", 589_824, "0.6M"),
    ("lora_pp", 884_736, "0.9M"), ("prefix_lora", 681_984, "0.7M")])
def test_parameter_counts_at_bert_base_size_match_the_paper(method, count, printed):
    config = BertConfig()   # bert-base shape: 12 layers, hidden 768; random weights, no download
    base = backbone.from_config(config)
    ranker = rankers.build("colbert", base.model, base.tokenizer, {**SETTINGS, "max_seq_len": 512})
    methods.apply(ranker, method, SETTINGS_OF[method], LR)
    assert methods.count_trainable(ranker) == count
    assert format_count(count) == printed


def _small(method):
    settings = SETTINGS_OF[method]
    if method == "prefix_lora":
        return {"prefix": {**PREFIX, "length": 3}, "lora": {**LORA, "rank": 2}}
    if "length" in settings:
        return {**settings, "length": 3}
    return {**settings, "rank": 2}


def _steps(ranker, groups, steps=3):
    optimizer = torch.optim.Adam(groups)
    ranker.train()
    for _ in range(steps):
        optimizer.zero_grad()
        ranker.score_pairs([[2000, 2001], [2002]], [[3000, 3001, 3002], [3003]]).sum().backward()
        optimizer.step()


@pytest.mark.parametrize("method", ["prompt", "prefix", "lora_pp", "prefix_lora"])
@pytest.mark.parametrize("ranker_name", ["monobert", "twinbert", "colbert"])
def test_backbone_stays_bitwise_unchanged_and_method_modules_move(method, ranker_name):
    ranker = tiny_ranker(ranker_name)
    frozen = backbone_weights(ranker)
    groups = methods.apply(ranker, method, _small(method), LR)
    trained = {name: p.clone() for name, p in ranker.named_parameters() if p.requires_grad}
    _steps(ranker, groups)
    after = backbone_weights(ranker)
    assert after.keys() == frozen.keys()
    assert all(torch.equal(after[k], v) for k, v in frozen.items())
    moved = [n for n, p in ranker.named_parameters() if p.requires_grad and not torch.equal(p, trained[n])]
    assert any(n.startswith("peft.") or "lora_" in n for n in moved)


@pytest.mark.parametrize("kind", ["hidden", "kv"])
def test_prefixes_reach_every_layer_and_never_appear_in_outputs(kind):
    ranker = tiny_ranker("twinbert").eval()
    methods.apply(ranker, "prefix", {**PREFIX, "length": 3, "kind": kind}, LR)
    ids = torch.tensor([[101, 2000, 2001, 102]])
    with torch.no_grad():
        base = ranker.bert(input_ids=ids).last_hidden_state
        assert base.shape[1] == 4                              # no prefix position in the output
        for mlp in ranker.peft["prefix"].source.mlps:          # one MLP per layer (kv: per layer and k/v)
            mlp[-1].bias.add_(1.0)
            assert not torch.allclose(ranker.bert(input_ids=ids).last_hidden_state, base)
            mlp[-1].bias.sub_(1.0)


@pytest.mark.parametrize("method", ["prompt", "prefix"])
def test_padding_does_not_change_prefixed_outputs(method):
    """The attention mask is extended for the new positions: padded and unpadded inputs agree."""
    ranker = tiny_ranker("twinbert").eval()
    methods.apply(ranker, method, _small(method), LR)
    with torch.no_grad():
        alone = ranker.encode([[2000, 2001]], rankers.QUERY)[0]
        padded = ranker.encode([[2000, 2001], [2002, 2003, 2004, 2005, 2006]], rankers.QUERY)[0]
    assert torch.allclose(alone, padded, atol=1e-5)


def test_changing_the_prefix_changes_the_score():
    ranker = tiny_ranker("colbert").eval()
    methods.apply(ranker, "prefix", _small("prefix"), LR)
    with torch.no_grad():
        before = ranker.score_pairs([[2000]], [[3000, 3001]])
        ranker.peft["prefix"].source.source.mul_(-3.0)
        assert not torch.allclose(before, ranker.score_pairs([[2000]], [[3000, 3001]]))


def test_lora_pp_adds_the_attention_output_dense_only():
    ranker = tiny_ranker("monobert")
    methods.apply(ranker, "lora_pp", _small("lora_pp"), LR)
    adapted = {n.rsplit(".lora_A", 1)[0] for n, _ in ranker.bert.named_parameters() if ".lora_A" in n}
    assert adapted == {f"encoder.layer.{i}.{m}" for i in range(2)
                       for m in ("attention.self.query", "attention.self.value", "attention.output.dense")}


def test_prompt_tuning_keeps_sequences_within_the_position_limit():
    ranker = tiny_ranker("monobert")
    methods.apply(ranker, "prompt", _small("prompt"), LR)
    assert ranker.max_seq_len == SETTINGS["max_seq_len"] - 3
