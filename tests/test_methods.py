"""Fine-tuning methods: what trains, what stays frozen, parameter counts, saved state."""
import pytest
import torch

from peftir.semi_siamese.contract import resolve_method
from peftir.models import learned
from peftir.semi_siamese.configured import apply

from tiny import LR, apply_method, backbone_weights, tiny_ranker
LORA = {"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["query", "value"], "scaling": "alpha_over_r"}


def _train_steps(ranker, groups, steps=3):
    optimizer = torch.optim.Adam(groups)
    ranker.train()
    for _ in range(steps):
        optimizer.zero_grad()
        ranker.score_pairs([[2000, 2001], [2002]], [[3000, 3001], [3002, 3003]]).sum().backward()
        optimizer.step()


@pytest.mark.parametrize("name", ["monobert", "twinbert", "colbert"])
def test_lora_leaves_backbone_weights_bitwise_unchanged(name):
    ranker = tiny_ranker(name)
    before = backbone_weights(ranker)
    groups = apply_method(ranker, "lora", lora=LORA)
    head_before = [p.clone() for p in ranker.head_parameters()]
    _train_steps(ranker, groups)
    after = backbone_weights(ranker)
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], v) for k, v in before.items())
    lora_b = [p for n, p in ranker.bert.named_parameters() if "lora_B" in n]
    assert lora_b and any(p.abs().sum() > 0 for p in lora_b)          # B starts at zero and moved
    assert any(not torch.equal(a, b) for a, b in zip(head_before, ranker.head_parameters()))


def test_full_finetuning_moves_backbone_weights():
    ranker = tiny_ranker("twinbert")
    before = ranker.bert.encoder.layer[0].attention.self.query.weight.clone()
    _train_steps(ranker, apply_method(ranker, "full"))
    assert not torch.equal(before, ranker.bert.encoder.layer[0].attention.self.query.weight)


def test_lora_parameter_count_is_computed_from_the_modules():
    ranker = tiny_ranker("colbert")
    apply_method(ranker, "lora", lora=LORA)
    layers, hidden, rank = 2, 32, 4
    assert learned.count_trainable(ranker) == 2 * layers * rank * (hidden + hidden)
    full = tiny_ranker("colbert")
    apply_method(full, "full")
    assert learned.count_trainable(full) == sum(p.numel() for p in full.bert.parameters())


@pytest.mark.parametrize("scaling, expected", [("alpha_over_r", 8 / 4), ("r_over_alpha", 4 / 8)])
def test_lora_scaling_convention(scaling, expected):
    ranker = tiny_ranker("twinbert")
    apply_method(ranker, "lora", lora={**LORA, "scaling": scaling})
    layer = ranker.bert.encoder.layer[0].attention.self.query
    assert layer.scaling["default"] == pytest.approx(expected)


def test_optimizer_groups_use_table8_learning_rates():
    lr = {"ranker": 1e-4, "bert": 1e-5, "peft": 2e-4}
    ranker = tiny_ranker("monobert")
    groups = apply_method(ranker, "lora", lr, lora=LORA)
    head = {id(p) for p in ranker.head_parameters()}
    for group in groups:
        is_head = all(id(p) in head for p in group["params"])
        assert group["lr"] == (lr["ranker"] if is_head else lr["peft"])
    assert {g["lr"] for g in apply_method(tiny_ranker("monobert"), "full", lr)} == {1e-5, 1e-4}


def test_saved_state_round_trips_and_rejects_another_method():
    trained = tiny_ranker("twinbert")
    _train_steps(trained, apply_method(trained, "lora", lora=LORA))
    state = learned.learned_state(trained)
    fresh = tiny_ranker("twinbert")
    apply_method(fresh, "lora", lora=LORA)
    learned.load_learned_state(fresh, state)
    trained.eval(), fresh.eval()
    with torch.no_grad():
        assert torch.equal(trained.score_pairs([[2000]], [[3000]]), fresh.score_pairs([[2000]], [[3000]]))
    other = tiny_ranker("twinbert")
    apply_method(other, "full")
    with pytest.raises(ValueError, match="do not match"):
        learned.load_learned_state(other, state)


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="allowed: full, prompt, prefix, lora, lora_pp, prefix_lora"):
        resolve_method("bitfit", {})


def test_an_unknown_builder_is_an_error_not_a_silent_default():
    spec = {**resolve_method("lora", {"lora": LORA}), "parts": [{"method": "x", "builder": "bitfit", "settings": {}}]}
    with pytest.raises(KeyError, match="bitfit"):
        apply(tiny_ranker("twinbert"), spec, LR)
