"""Every named method, built with the shipped configuration's settings: what trains, what stays frozen,
what reaches the score, parameter counts at BERT-base size, and sequential hybrids' frozen first stage."""
import re
from pathlib import Path

import pytest
import torch
from transformers.models.bert.modeling_bert import BertConfig

from peftir.semi_siamese.contract import BEST_OF, METHODS, RANKERS, first_stage, resolve_method
from peftir.models.learned import count_trainable, learned_parameters, learned_state, load_first_stage, \
    load_learned_state
from peftir.models import backbone
from peftir.semi_siamese import rankers as models
from peftir.reports.cells import format_count

from tiny import CONFIGURED, SETTINGS, apply_method, backbone_weights, tiny_ranker
from tiny import method as resolved_method

LFT = [m for m in METHODS if m != "full"]
CASES = [(m, r) for m in LFT for r in RANKERS
         if RANKERS[r].bi_encoder or not METHODS[m].bi_encoder_only]
KV = {**CONFIGURED["prefix"], "kind": "kv"}     # Li & Liang's prefixes, the released code's
# Every method with a plain prefix part once more with key/value prefixes, alone, concurrent and in hybrids
# (the semi-Siamese prefixes are hidden-state prefixes only).
CASES += [(f"{m}:kv", r) for m, r in CASES
          if {p["builder"] for p in resolved_method(m)["parts"]} & {"prefix", "ss_prefix"} == {"prefix"}]


def _apply(ranker, method):
    name, _, kind = method.partition(":")
    return apply_method(ranker, name, **({"prefix": KV} if kind == "kv" else {}))


def _steps(ranker, groups, steps=2):
    optimizer = torch.optim.Adam(groups)
    ranker.train()
    for _ in range(steps):
        optimizer.zero_grad()
        ranker.score_pairs([[2000, 2001], [2002]], [[3000, 3001, 3002], [3003]]).sum().backward()
        optimizer.step()


def _score(ranker):
    ranker.eval()
    with torch.no_grad():
        return ranker.score_pairs([[2000, 2001], [2002]], [[3000, 3001, 3002], [3003, 3004]])


@pytest.mark.parametrize("method, count, printed", [
    ("full", 108_891_648, "110M"), ("prompt", 7_680, "8K"), ("prefix", 92_160, "0.1M"),
    ("lora", 589_824, "0.6M"), ("lora_pp", 884_736, "0.9M"),
    ("prefix_lora", 681_984, "0.7M"), ("prefix_then_lora", 681_984, "0.7M"), ("lora_then_prefix", 681_984, "0.7M"),
    ("ss_lora", 884_736, "0.9M"), ("ss_lora_hetero_query", 884_736, "0.9M"), ("ss_lora_none", 1_179_648, "1.2M"),
    ("prefix_then_ss_lora", 976_896, "1M"), ("ss_lora_then_prefix", 976_896, "1M"),
    # ours: a query and a document prefix set per layer remain (the paper prints 0.1M; README); concat's 5 common
    # positions are one set: 5 + 5 + 5 vectors a layer
    ("ss_prefix", 184_320, "0.2M"), ("ss_prefix_concat", 138_240, "0.1M"), ("ss_prefix_none", 184_320, "0.2M"),
])
def test_parameter_counts_at_bert_base_size(method, count, printed):
    base = backbone.from_config(BertConfig())   # bert-base shape: 12 layers, hidden 768; random weights
    ranker = models.build("colbert", base.model, base.tokenizer, {**SETTINGS, "max_seq_len": 512})
    _apply(ranker, method)
    assert count_trainable(ranker) == count
    assert format_count(count) == printed


@pytest.mark.parametrize("method, ranker_name", CASES)
def test_backbone_stays_bitwise_unchanged_and_only_the_method_and_head_move(method, ranker_name):
    ranker = tiny_ranker(ranker_name)
    frozen = backbone_weights(ranker)
    groups = _apply(ranker, method)
    before = learned_state(ranker)
    _steps(ranker, groups)
    after = backbone_weights(ranker)
    assert after.keys() == frozen.keys() and all(torch.equal(after[k], v) for k, v in frozen.items())
    moved = {n for n, p in learned_state(ranker).items() if not torch.equal(p, before[n])}
    assert any(n.startswith("peft.") or ".lora_" in n for n in moved)
    assert any(not n.startswith(("bert.", "peft.")) for n in moved)          # the head trains too
    trainable = {n for n, p in ranker.named_parameters() if p.requires_grad}
    assert moved <= trainable


def _components(ranker):
    """Learned encoder parameters grouped by module (layer indices and A/B merged): peft.prefix.source,
    bert...value.lora.value_document, ..."""
    groups = {}
    for name, parameter in learned_parameters(ranker).items():
        if name.startswith(("bert.", "peft.")):
            key = re.sub(r"\.\d+(?=\.|$)", "", name.rsplit(".", 1)[0] if "lora_" in name or "mlps" in name
                         or "specific" in name else name)
            groups.setdefault(re.sub(r"lora_[AB]", "lora", key), []).append(parameter)
    return groups


@pytest.mark.parametrize("method, ranker_name", CASES)
def test_every_learned_module_reaches_the_score(method, ranker_name):
    """Catches a module that is built but bypassed (the released code's hybrids skip the value LoRA)."""
    ranker = tiny_ranker(ranker_name)
    _apply(ranker, method)
    components = _components(ranker)
    assert components
    generator = torch.Generator().manual_seed(0)
    for name, parameters in components.items():
        base = _score(ranker)
        saved = [p.detach().clone() for p in parameters]
        with torch.no_grad():
            for parameter in parameters:
                parameter.add_(torch.randn(parameter.shape, generator=generator))
        assert not torch.allclose(_score(ranker), base), f"{name} does not change the score"
        with torch.no_grad():
            for parameter, value in zip(parameters, saved):
                parameter.copy_(value)


SEQUENTIAL = [m for m, spec in METHODS.items() if spec.sequential]


@pytest.mark.parametrize("method", SEQUENTIAL)
def test_sequential_hybrid_trains_its_second_part_on_the_frozen_first(method):
    first = first_stage(method)
    stage1 = tiny_ranker("colbert")
    _steps(stage1, _apply(stage1, first))
    kept = learned_state(stage1)

    hybrid = tiny_ranker("colbert")
    groups = _apply(hybrid, method)
    load_first_stage(hybrid, kept)
    first_names = {n for n in kept if n.startswith(("bert.", "peft."))}
    _steps(hybrid, groups, steps=3)
    state = learned_state(hybrid)
    assert all(torch.equal(state[n], kept[n]) for n in first_names)       # the first part never moves
    second = {n for n in state if n.startswith(("bert.", "peft.")) and n not in first_names}
    assert second and all(hybrid.get_parameter(n).requires_grad for n in second)
    assert all(not hybrid.get_parameter(n).requires_grad for n in first_names)

    rebuilt = tiny_ranker("colbert")        # what the rerank job does: the method, then the saved state
    _apply(rebuilt, method)
    load_learned_state(rebuilt, state)
    assert torch.equal(_score(rebuilt), _score(hybrid))


def test_a_first_stage_from_another_method_is_rejected():
    stage1 = tiny_ranker("colbert")
    _apply(stage1, "lora")
    hybrid = tiny_ranker("colbert")
    _apply(hybrid, "prefix_then_lora")
    with pytest.raises(ValueError, match="do not match"):
        load_first_stage(hybrid, learned_state(stage1))


def test_settings_come_only_from_the_entries_a_method_uses():
    changed = {**CONFIGURED, "lora": {**CONFIGURED["lora"], "rank": 4}}
    affected = {m for m in METHODS
                if resolve_method(m, changed) != resolve_method(m, CONFIGURED)}
    assert affected == {"lora", "prefix_lora", "prefix_then_lora", "lora_then_prefix", "ss_lora",
                        "ss_lora_hetero_query", "ss_lora_none", "prefix_then_ss_lora", "ss_lora_then_prefix"}
    assert resolve_method("ss_prefix_concat", CONFIGURED)["parts"][0]["settings"]["variant"] == "concat"
    hybrid = resolve_method("ss_lora_then_prefix", CONFIGURED)
    assert [(p["method"], p["builder"]) for p in hybrid["parts"]] == [("ss_lora", "ss_lora"), ("prefix", "prefix")]
    assert hybrid["parts"][0]["settings"]["variant"] == "hetero_value" and hybrid["sequential"]


@pytest.mark.parametrize("method", [m for m, spec in METHODS.items() if spec.bi_encoder_only])
def test_semi_siamese_methods_refuse_cross_encoders(method):
    with pytest.raises(ValueError, match="bi-encoders"):
        _apply(tiny_ranker("monobert"), method)


def test_the_schema_names_exactly_the_catalogue():
    from peftir.pipeline.config import SCHEMA, joined_schema

    repo = Path(__file__).resolve().parents[1]
    schema = joined_schema(repo / SCHEMA, repo)
    assert schema["$defs"]["method"]["enum"] == list(METHODS)
    assert schema["$defs"]["table_row"]["enum"] == [*METHODS, BEST_OF]
    assert schema["$defs"]["ranker"]["enum"] == list(RANKERS)
