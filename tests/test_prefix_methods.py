"""Prompt-, prefix-tuning and LoRA++ wiring (what every method shares is tested in test_catalogue)."""
import pytest
import torch

from peftir.semi_siamese import rankers

from tiny import SETTINGS, apply_method, tiny_ranker
LORA = {"rank": 16, "alpha": 32, "dropout": 0.0, "target_modules": ["query", "value"], "scaling": "alpha_over_r"}
PREFIX = {"length": 10, "bottleneck": 256, "kind": "hidden"}
SETTINGS_OF = {
    "prompt": {"length": 10, "bottleneck": 256},
    "prefix": PREFIX,
    "lora": LORA,
    "lora_pp": {**LORA, "target_modules": ["query", "value", "attention.output.dense"]},
}


def _small(method):
    settings = SETTINGS_OF[method]
    if "length" in settings:
        return {**settings, "length": 3}
    return {**settings, "rank": 2}


@pytest.mark.parametrize("kind", ["hidden", "kv"])
def test_prefixes_reach_every_layer_and_never_appear_in_outputs(kind):
    ranker = tiny_ranker("twinbert").eval()
    apply_method(ranker, "prefix", prefix={**PREFIX, "length": 3, "kind": kind})
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
    apply_method(ranker, method, **{method: _small(method)})
    with torch.no_grad():
        alone = ranker.encode([[2000, 2001]], rankers.QUERY)[0]
        padded = ranker.encode([[2000, 2001], [2002, 2003, 2004, 2005, 2006]], rankers.QUERY)[0]
    assert torch.allclose(alone, padded, atol=1e-5)


def test_changing_the_prefix_changes_the_score():
    ranker = tiny_ranker("colbert").eval()
    apply_method(ranker, "prefix", prefix=_small("prefix"))
    with torch.no_grad():
        before = ranker.score_pairs([[2000]], [[3000, 3001]])
        ranker.peft["prefix"].source.source.mul_(-3.0)
        assert not torch.allclose(before, ranker.score_pairs([[2000]], [[3000, 3001]]))


def test_lora_pp_adds_the_attention_output_dense_only():
    ranker = tiny_ranker("monobert")
    apply_method(ranker, "lora_pp", lora_pp=_small("lora_pp"))
    adapted = {n.rsplit(".lora_A", 1)[0] for n, _ in ranker.bert.named_parameters() if ".lora_A" in n}
    assert adapted == {f"encoder.layer.{i}.{m}" for i in range(2)
                       for m in ("attention.self.query", "attention.self.value", "attention.output.dense")}


def test_prompt_tuning_keeps_sequences_within_the_position_limit():
    ranker = tiny_ranker("monobert")
    apply_method(ranker, "prompt", prompt=_small("prompt"))
    assert ranker.max_seq_len == SETTINGS["max_seq_len"] - 3


@pytest.mark.parametrize("method", ["prompt", "prefix", "ss_prefix"])
def test_sources_start_where_the_word_embeddings_are(method):
    """As in the released code: the source is drawn from N(mean, std) of the backbone's word embeddings."""
    ranker = tiny_ranker("twinbert")
    with torch.no_grad():
        ranker.bert.embeddings.word_embeddings.weight.mul_(5.0).add_(1.0)   # mean ≈ 1, std ≈ 0.1
    apply_method(ranker, method, **{"prompt": {"length": 50, "bottleneck": 8}, "prefix": {**PREFIX, "length": 50}})
    source = ranker.peft[method].source.source.detach()
    embeddings = ranker.bert.embeddings.word_embeddings.weight
    assert source.mean().item() == pytest.approx(embeddings.mean().item(), abs=0.02)
    assert source.std().item() == pytest.approx(embeddings.std().item(), rel=0.1)
