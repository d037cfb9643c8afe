"""Fine-tuning methods: what trains, what stays frozen, parameter counts, saved state."""
import pytest
import torch

from peftir import methods

from tiny import backbone_weights, tiny_ranker

LR = {"ranker": 1e-2, "bert": 1e-2, "peft": 1e-2}
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
    groups = methods.apply(ranker, "lora", LORA, LR)
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
    _train_steps(ranker, methods.apply(ranker, "full", {}, LR))
    assert not torch.equal(before, ranker.bert.encoder.layer[0].attention.self.query.weight)


def test_lora_parameter_count_is_computed_from_the_modules():
    ranker = tiny_ranker("colbert")
    methods.apply(ranker, "lora", LORA, LR)
    layers, hidden, rank = 2, 32, 4
    assert methods.count_trainable(ranker) == 2 * layers * rank * (hidden + hidden)
    full = tiny_ranker("colbert")
    methods.apply(full, "full", {}, LR)
    assert methods.count_trainable(full) == sum(p.numel() for p in full.bert.parameters())


@pytest.mark.parametrize("scaling, expected", [("alpha_over_r", 8 / 4), ("r_over_alpha", 4 / 8)])
def test_lora_scaling_convention(scaling, expected):
    ranker = tiny_ranker("twinbert")
    methods.apply(ranker, "lora", {**LORA, "scaling": scaling}, LR)
    layer = ranker.bert.encoder.layer[0].attention.self.query
    assert layer.scaling["default"] == pytest.approx(expected)


def test_optimizer_groups_use_table8_learning_rates():
    lr = {"ranker": 1e-4, "bert": 1e-5, "peft": 2e-4}
    ranker = tiny_ranker("monobert")
    groups = methods.apply(ranker, "lora", LORA, lr)
    head = {id(p) for p in ranker.head_parameters()}
    for group in groups:
        is_head = all(id(p) in head for p in group["params"])
        assert group["lr"] == (lr["ranker"] if is_head else lr["peft"])
    assert {g["lr"] for g in methods.apply(tiny_ranker("monobert"), "full", {}, lr)} == {1e-5, 1e-4}


def test_saved_state_round_trips_and_rejects_another_method():
    trained = tiny_ranker("twinbert")
    _train_steps(trained, methods.apply(trained, "lora", LORA, LR))
    state = methods.learned_state(trained)
    fresh = tiny_ranker("twinbert")
    methods.apply(fresh, "lora", LORA, LR)
    methods.load_learned_state(fresh, state)
    trained.eval(), fresh.eval()
    with torch.no_grad():
        assert torch.equal(trained.score_pairs([[2000]], [[3000]]), fresh.score_pairs([[2000]], [[3000]]))
    other = tiny_ranker("twinbert")
    methods.apply(other, "full", {}, LR)
    with pytest.raises(ValueError, match="do not match"):
        methods.load_learned_state(other, state)


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="allowed: full, prompt, prefix, lora, lora_pp, prefix_lora"):
        methods.apply(tiny_ranker("twinbert"), "bitfit", {}, LR)
