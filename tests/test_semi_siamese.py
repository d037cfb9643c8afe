"""Semi-Siamese methods: query and document paths differ exactly by the modules a variant names."""
import pytest
import torch

from peftir.semi_siamese import rankers

from tiny import apply_method, tiny_ranker

SS_LORA = {"hetero_value": "ss_lora", "hetero_query": "ss_lora_hetero_query", "none": "ss_lora_none"}
SS_PREFIX = {"average": "ss_prefix", "concat": "ss_prefix_concat", "none": "ss_prefix_none"}
LORA = {"rank": 2, "alpha": 4, "dropout": 0.0, "target_modules": ["query", "value"], "scaling": "alpha_over_r"}
PREFIX = {"length": 4, "bottleneck": 256, "kind": "hidden"}


def _grad_names(ranker, role):
    """Trainable parameters that a forward pass in ``role`` reaches."""
    ranker.zero_grad(set_to_none=True)
    encoded = ranker.encode([[2000, 2001, 2002]], role)[0]
    # a random readout: a plain sum of LayerNorm-ed or normalised vectors has (near-)zero gradient
    weights = torch.randn(encoded.shape, generator=torch.Generator().manual_seed(0))
    (encoded * weights).sum().backward()
    return {n for n, p in ranker.named_parameters() if p.requires_grad and p.grad is not None and p.grad.abs().sum() > 0}


def _adapters(names):
    return {n.split(".lora_")[1].split(".")[1] for n in names if ".lora_" in n}


@pytest.mark.parametrize("variant, query_side, document_side", [
    ("hetero_value", {"query_shared", "value_query"}, {"query_shared", "value_document"}),
    ("hetero_query", {"value_shared", "query_query"}, {"value_shared", "query_document"}),
    ("none", {"query_query", "value_query"}, {"query_document", "value_document"}),
])
@pytest.mark.parametrize("name", ["twinbert", "colbert"])
def test_ss_lora_roles_use_exactly_the_named_adapters(name, variant, query_side, document_side):
    ranker = tiny_ranker(name)
    apply_method(ranker, SS_LORA[variant], lora=LORA)
    with torch.no_grad():                       # LoRA B starts at zero: give every adapter an effect
        for n, p in ranker.bert.named_parameters():
            if "lora_B" in n:
                p.normal_()
    assert _adapters(_grad_names(ranker, rankers.QUERY)) == query_side
    assert _adapters(_grad_names(ranker, rankers.DOCUMENT)) == document_side
    with torch.no_grad():                       # the same input, encoded as a query and as a document
        batch = ranker.batch([[101, 2000, 2001, 102]])
        assert not torch.allclose(ranker.encoder(*batch, rankers.QUERY), ranker.encoder(*batch, rankers.DOCUMENT))


@pytest.mark.parametrize("variant, query_only, shared", [
    ("average", {"specific.query"}, {"source.mlps", "source.source"}),
    ("concat", {"specific.query"}, {"source.mlps", "source.source"}),
    ("none", {"specific.query"}, {"source.source"}),
])
def test_ss_prefix_roles_share_the_source_and_differ_by_their_generators(variant, query_only, shared):
    ranker = tiny_ranker("colbert")
    apply_method(ranker, SS_PREFIX[variant], prefix=PREFIX, ss_prefix={"common_length": 2})
    reached = {n.removeprefix("peft.ss_prefix.").rsplit(".", 3)[0] if "specific" in n or "mlps" in n
               else n.removeprefix("peft.ss_prefix.") for n in _grad_names(ranker, rankers.QUERY) if "ss_prefix" in n}
    assert {r for r in reached if "specific" in r} == query_only
    assert {r for r in reached if "specific" not in r} == shared
    document = {n for n in _grad_names(ranker, rankers.DOCUMENT) if "specific" in n}
    assert document and all("specific.document" in n for n in document)


def test_ss_prefix_concat_takes_the_first_positions_from_the_role():
    ranker = tiny_ranker("twinbert")
    apply_method(ranker, "ss_prefix_concat", prefix=PREFIX, ss_prefix={"common_length": 2})
    module = ranker.peft["ss_prefix"]
    with torch.no_grad():
        module.set_role(rankers.QUERY)
        query = module.prefixes(0)
        module.set_role(rankers.DOCUMENT)
        document = module.prefixes(0)
        common = module.source(0)
    assert torch.equal(query[2:], common[2:]) and torch.equal(document[2:], common[2:])
    assert not torch.allclose(query[:2], document[:2])
