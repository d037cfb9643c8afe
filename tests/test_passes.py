"""Rows per forward pass: a number as configured, ``auto`` sized by a memory model that holds against what a pass
allocates; the same gradient at any pass size; the choice recorded in what a job writes."""
import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from transformers import BertConfig, BertForMaskedLM, BertModel, DistilBertConfig, DistilBertModel

from peftir.execution import passes
from peftir.execution.memory import MEMORY_ENV
from peftir.execution.seam import CPU, Execution
from peftir.semi_siamese.loop import train_rows, train_step

from tiny import apply_method, tiny_ranker

BERT_BASE = passes.Encoder(768, 3072, 12, 12, 30522, 109_482_240, 109_482_240)
PAIR_TRIPLE = passes.Shape(2 * 512, True, sequence=512)          # monoBERT: two pairs of 512 tokens


def test_a_number_is_used_as_configured_and_never_more_than_the_batch():
    assert passes.sized(2, 16, BERT_BASE, PAIR_TRIPLE, 0, True, "cuda") == 2
    assert passes.sized(32, 16, BERT_BASE, PAIR_TRIPLE, 0, True, "cuda") == 16


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "fast"])
def test_anything_else_is_refused_with_what_is_allowed(bad):
    with pytest.raises(ValueError, match="a positive integer or 'auto'"):
        passes.sized(bad, 16, BERT_BASE, PAIR_TRIPLE, 80e9, True, "cuda")


def test_auto_takes_the_whole_paper_batch_on_an_80_gb_gpu_and_what_fits_on_a_smaller_one():
    row = passes.row_bytes(BERT_BASE, PAIR_TRIPLE, True, "cuda")
    fixed = passes.fixed_bytes(BERT_BASE, PAIR_TRIPLE, True)
    assert passes.sized(passes.AUTO, 16, BERT_BASE, PAIR_TRIPLE, int(80e9), True, "cuda") == 16
    assert passes.sized(passes.AUTO, 16, BERT_BASE, PAIR_TRIPLE, fixed + int(5.5 * row / passes.MARGIN), True,
                        "cuda") == 5
    assert passes.sized(passes.AUTO, 16, BERT_BASE, PAIR_TRIPLE, 0, True, "cuda") == 1      # at least one row


def test_on_a_cpu_encoding_takes_at_most_64_texts_a_pass_training_the_whole_batch():
    encoding = passes.Shape(128, False)
    assert passes.sized(passes.AUTO, 4096, BERT_BASE, encoding, int(20e9), False, "cpu") == passes.CPU_ENCODE_ROWS
    assert passes.sized(passes.AUTO, 4096, BERT_BASE, encoding, int(20e9), True, "cuda") > passes.CPU_ENCODE_ROWS
    assert passes.sized(passes.AUTO, 8, BERT_BASE, passes.Shape(128, True), int(20e9), False, "cpu") == 8


def test_bf16_halves_the_activations_and_a_vocabulary_head_adds_to_them():
    shape = passes.Shape(256, True)
    assert passes.row_bytes(BERT_BASE, shape, True, "cuda") < 0.6 * passes.row_bytes(BERT_BASE, shape, False, "cuda")
    with_head = passes.Shape(256, True, heads=1)
    assert passes.row_bytes(BERT_BASE, with_head, True, "cuda") - passes.row_bytes(BERT_BASE, shape, True, "cuda") == \
        256 * (2 + 24) * 30522
    assert passes.row_bytes(BERT_BASE, passes.Shape(256, False), True, "cuda") < \
        0.1 * passes.row_bytes(BERT_BASE, shape, True, "cuda")


def peak_bytes(step) -> int:
    """The most bytes the CPU tensors of ``step`` held at once (torch's memory profile of the step), beyond what was
    allocated before it."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
        step()
    held = peak = 0
    for _, action, _, size in prof._memory_profile().timeline:
        held += size if action.name == "CREATE" else -size if action.name == "DESTROY" else 0
        peak = max(peak, held)
    return peak


SMALL_BERT = BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
                        vocab_size=1000)
SMALL_DISTILBERT = DistilBertConfig(dim=128, n_layers=2, n_heads=4, hidden_dim=512, vocab_size=1000)


@pytest.mark.parametrize("kind", ["bert-train", "distilbert-train", "bert-mlm-train", "bert-encode"])
def test_the_memory_model_holds_against_what_a_pass_allocates(kind):
    """Per row (from passes of 4 and of 12 rows of 128 tokens), the model predicts at least what the pass allocates
    and not twice that: it sizes a pass that fits without leaving most of the memory idle."""
    torch.manual_seed(0)
    config = SMALL_DISTILBERT if kind.startswith("distilbert") else SMALL_BERT
    model = {"distilbert-train": DistilBertModel, "bert-mlm-train": BertForMaskedLM}.get(kind, BertModel)(config)
    trains, heads = not kind.endswith("encode"), int("mlm" in kind)

    def step(rows: int) -> None:
        ids = torch.randint(5, 1000, (rows, 128))
        if not trains:
            with torch.no_grad():
                model.eval()(input_ids=ids)
        elif heads:
            model.train()(input_ids=ids, labels=ids).loss.backward()
        else:
            model.train()(input_ids=ids).last_hidden_state.pow(2).mean().backward()
        model.zero_grad(set_to_none=True)

    measured = [peak_bytes(lambda: step(rows)) for rows in (4, 12)]
    per_row = (measured[1] - measured[0]) / 8
    predicted = passes.row_bytes(passes.Encoder.of(config), passes.Shape(128, trains, heads), False, "cpu")
    assert per_row <= predicted <= 2 * per_row, (kind, per_row, predicted)


def test_the_cpu_budget_is_the_jobs_memory_less_what_the_process_holds(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "100000")
    roomy = passes.free_bytes(torch.device("cpu"))
    monkeypatch.setenv(MEMORY_ENV, str(passes.resident_bytes() // 2**20 + 64))
    assert 0 < passes.free_bytes(torch.device("cpu")) <= 64 * 2**20 < roomy
    monkeypatch.setenv(MEMORY_ENV, "1")
    assert passes.free_bytes(torch.device("cpu")) == 0


def test_a_jobs_execution_records_its_choices_and_the_shared_default_does_not():
    execution = Execution.of({"device": "cpu", "precision": "fp32"})
    ranker = execution.place(tiny_ranker("twinbert"))
    rows = train_rows(ranker, {"micro_batch": passes.AUTO, "batch_size": 8})
    assert rows == 8
    assert execution.used()["passes"]["train"] == {"rows": 8, "of": 8, "configured": "auto",
                                                   "predicted_gb": execution.chosen["train"]["predicted_gb"]}
    train_rows(tiny_ranker("twinbert"), {"micro_batch": 2, "batch_size": 8})       # on the CPU default
    assert "passes" not in CPU.used()


TRIPLES = [([2000, 2001], [3000, 3001, 3002], [3003]), ([2002], [3004, 3005], [3006, 3007, 3008, 3009]),
           ([2003, 2004, 2005], [3010], [3011, 3012]), ([2006], [3013] * 30, [3014] * 12)]   # the last: two chunks


def gradient_of(ranker, rows: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(3)
    optimizer = torch.optim.SGD([p for p in ranker.parameters() if p.requires_grad], lr=0.0)   # keeps the weights
    train_step(ranker, optimizer, TRIPLES, rows)
    return {name: p.grad.clone() for name, p in ranker.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name, method", [("monobert", "full"), ("twinbert", "lora"), ("colbert", "ss_prefix"),
                                          ("twinbert", "prompt")])
def test_one_pass_and_passes_of_one_triple_give_the_same_gradient(name, method):
    """Dropout off (the tiny BERT has none; the ranker's own set to 0): the gradient is the batch's at any size."""
    ranker = tiny_ranker(name, monobert={"dropout": 0.0})
    apply_method(ranker, method, lora={"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["query", "value"],
                                       "scaling": "alpha_over_r"})
    whole, single = gradient_of(ranker, len(TRIPLES)), gradient_of(ranker, 1)
    assert whole.keys() == single.keys() and whole
    assert all(torch.allclose(whole[key], single[key], atol=1e-6, rtol=1e-4) for key in whole)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_auto_puts_the_paper_batch_in_one_pass_and_the_model_covers_its_peak():
    """monoBERT on BERT-base, 16 triples of 512 tokens in bf16: one pass on a GPU of 40 GB or more, and the step's
    peak allocation within what the memory model predicted for the weights, the optimiser and the pass."""
    from peftir.models import backbone
    from peftir.semi_siamese import rankers

    execution = Execution(torch.device("cuda"), torch.bfloat16)
    encoder = backbone.from_config(BertConfig())
    settings = {"max_query_len": 20, "max_doc_len": 489, "max_seq_len": 512, "monobert": {"dropout": 0.1}}
    ranker = execution.place(rankers.build("monobert", encoder.model, encoder.tokenizer, settings))
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    rows = train_rows(ranker, {"micro_batch": passes.AUTO, "batch_size": 16})
    if torch.cuda.mem_get_info()[1] >= 40e9:
        assert rows == 16
    query, doc = list(range(2000, 2020)), list(range(3000, 3489))
    optimizer = torch.optim.Adam(ranker.parameters())
    train_step(ranker, optimizer, [(query, doc, doc)] * 16, rows)
    torch.cuda.synchronize()
    shape = passes.Shape(ranker.triple_tokens(), True, sequence=512)
    size = passes.Encoder.of(ranker.bert.config, ranker)
    predicted = passes.fixed_bytes(size, shape, True) + rows * passes.row_bytes(size, shape, True, "cuda")
    assert torch.cuda.max_memory_allocated() - before <= predicted
