"""Training: the paper's loss, triple sampling, best-epoch selection, seeded reproducibility."""
import math
import random
from pathlib import Path

import pytest
import torch

from peftir.models.learned import learned_state
from peftir.semi_siamese.configured import seed_everything
from peftir.models.inputs import RankingData
from peftir.semi_siamese import loop as training

from tiny import Pretokenized, apply_method, tiny_ranker


def test_pairwise_loss_is_one_minus_softmax_of_positive():
    pos, neg = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 1.0])
    expected = ((1 - math.exp(2) / (math.exp(2) + 1)) + (1 - 1 / (1 + math.e))) / 2
    assert training.pairwise_loss(pos, neg).item() == pytest.approx(expected)
    assert training.pairwise_loss(torch.tensor([5.0]), torch.tensor([-5.0])) < 0.01


def test_loss_gradient_raises_positive_and_lowers_negative():
    pos, neg = torch.tensor([0.3], requires_grad=True), torch.tensor([0.1], requires_grad=True)
    training.pairwise_loss(pos, neg).backward()
    assert pos.grad.item() < 0 < neg.grad.item()


DATA = RankingData(queries=Pretokenized({"q1": [1], "q2": [2], "q3": [3]}),
                   docs=Pretokenized({d: [9] for d in "abcdef"}),
                   candidates={"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"d": 1.0}, "q3": {"e": 1.0, "f": 0.5}},
                   qrels={"q1": {"a": 1, "c": 0, "z": 1}, "q2": {"d": 1}, "q3": {"e": 0}})


def test_only_queries_with_a_relevant_and_a_nonrelevant_candidate_train():
    assert training.trainable_queries(DATA, ["q1", "q2", "q3"]) == ["q1"]


def test_triples_take_positives_from_relevant_candidates_and_negatives_from_the_rest():
    triples = training.CandidateTriples(DATA, ["q1"]).epoch(1, random.Random(0), 200)
    assert {pos for _, pos, _ in triples} == {"a"}            # 'z' is relevant but not a candidate
    assert {neg for _, _, neg in triples} == {"b", "c"}        # judged non-relevant and unjudged


def test_an_epoch_cycles_through_the_queries_in_a_fresh_order_each_pass():
    """As the released code: every training query once per pass, a new shuffle for each pass."""
    data = RankingData(queries={}, docs={}, candidates={f"q{i}": {"a": 1.0, "b": 0.5} for i in range(10)},
                       qrels={f"q{i}": {"a": 1} for i in range(10)})
    triples = training.CandidateTriples(data, sorted(data.candidates)).epoch(1, random.Random(3), 25)
    passes = [[q for q, _, _ in triples[i:i + 10]] for i in range(0, 25, 10)]
    assert sorted(passes[0]) == sorted(passes[1]) == sorted(data.candidates)
    assert passes[0] != passes[1] and len(set(passes[2])) == 5


def test_queries_without_a_relevant_and_a_nonrelevant_candidate_cannot_train():
    with pytest.raises(ValueError, match="no training query has both"):
        training.CandidateTriples(DATA, ["q2", "q3"])


def test_fixed_triples_are_read_in_order_each_epoch_going_on_and_wrapping(tmp_path):
    path = tmp_path / "triples.tsv"
    path.write_text("".join(f"q{i}\tp{i}\tn{i}\n" for i in range(5)))
    triples = training.TriplesFile(path)
    assert [q for q, _, _ in triples.epoch(1, random.Random(0), 2)] == ["q0", "q1"]
    assert [q for q, _, _ in triples.epoch(2, random.Random(0), 2)] == ["q2", "q3"]
    assert [q for q, _, _ in triples.epoch(3, random.Random(0), 2)] == ["q4", "q0"]
    assert triples.epoch(2, random.Random(0), 1) == [("q1", "p1", "n1")]


def test_a_malformed_triples_line_is_named(tmp_path):
    from peftir.data.trec import MalformedFileError

    path = tmp_path / "triples.tsv"
    path.write_text("q0\tp0\tn0\nq1 p1 n1\n")
    with pytest.raises(MalformedFileError, match=r"triples.tsv, line 2: expected qid<TAB>relevant<TAB>non-relevant"):
        training.TriplesFile(path).epoch(1, random.Random(0), 2)


def test_training_keeps_the_best_validation_epoch():
    ranker = tiny_ranker("twinbert")
    groups = apply_method(ranker, "full", {"ranker": 1e-3, "bert": 1e-3, "peft": 1e-3})
    scores = iter([0.2, 0.5, 0.3])
    states = []

    def validate(model):
        states.append(learned_state(model))
        return next(scores)

    settings = {"epochs": 3, "pairs_per_epoch": 4, "batch_size": 2, "micro_batch": 1, "max_grad_norm": None}
    result = training.train(ranker, groups, DATA, training.CandidateTriples(DATA, ["q1", "q3"]), validate, settings,
                            seed=1)
    assert result.best_epoch == 2 and result.best_score == 0.5
    assert all(torch.equal(result.best_state[k], states[1][k]) for k in states[1])
    assert not all(torch.equal(result.best_state[k], states[2][k]) for k in states[2])


def test_same_seed_same_weights():
    def run(seed):
        seed_everything(seed)
        ranker = tiny_ranker("colbert")
        groups = apply_method(ranker, "full", {"ranker": 1e-3, "bert": 1e-3, "peft": 1e-3})
        settings = {"epochs": 1, "pairs_per_epoch": 4, "batch_size": 2, "micro_batch": 2, "max_grad_norm": None}
        pairs = training.CandidateTriples(DATA, ["q1"])
        return training.train(ranker, groups, DATA, pairs, lambda m: 0.0, settings, seed).best_state
    first, again = run(3), run(3)
    assert all(torch.equal(first[k], again[k]) for k in first)


READS = ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__")
PACKAGE = str(Path(training.__file__).resolve().parents[1])
STEPS = [("monobert", "full"), ("twinbert", "lora"), ("colbert", "ss_prefix"), ("colbert", "prompt")]
BATCH = [([2000, 2001], [3000, 3001, 3002], [3003]), ([2002], [3004] * 30, [3005, 3006])]


@pytest.mark.parametrize("name, method", STEPS)
def test_a_training_step_of_the_package_reads_nothing_back_from_its_tensors(name, method, monkeypatch):
    """On a GPU a read of a tensor's value waits for the device: a step queues its kernels and returns the loss on
    the device. Every read made directly by the package's code during a step is recorded here (the libraries' own:
    transformers' check that an attention mask is all ones, once per encoder call and not when compiled, and Adam's
    step counter, a host tensor, are theirs; the GPU test below counts what the device sees)."""
    import traceback

    ranker = tiny_ranker(name)
    optimizer = torch.optim.Adam(apply_method(ranker, method))
    reads = []
    for attribute in READS:
        original = getattr(torch.Tensor, attribute)

        def recorded(self, *args, original=original, attribute=attribute, **kwargs):
            caller = traceback.extract_stack(limit=2)[0]
            if caller.filename.startswith(PACKAGE):
                reads.append((attribute, caller.filename, caller.lineno))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, attribute, recorded)
    loss = training.train_step(ranker, optimizer, BATCH, rows=1, max_grad_norm=1.0)
    monkeypatch.undo()
    assert reads == [] and loss.dtype == torch.float64 and not loss.requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name, method", STEPS)
def test_on_a_gpu_a_step_waits_for_the_device_only_where_transformers_checks_its_mask(name, method):
    import warnings

    from peftir.execution.seam import Execution

    ranker = Execution(torch.device("cuda")).place(tiny_ranker(name))
    optimizer = torch.optim.Adam(apply_method(ranker, method))
    training.train_step(ranker, optimizer, BATCH, rows=2)           # warm: first-call allocations
    encoder_calls = []
    ranker.bert.register_forward_hook(lambda *_: encoder_calls.append(1))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            training.train_step(ranker, optimizer, BATCH, rows=2)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    assert len(syncs) <= len(encoder_calls), [str(w.message) for w in syncs]


def test_a_non_finite_batch_loss_stops_training_naming_the_epoch_and_batch(monkeypatch):
    from peftir.training.finite import NonFiniteLossError

    ranker = tiny_ranker("twinbert")
    groups = apply_method(ranker, "full", {"ranker": 1e-3, "bert": 1e-3, "peft": 1e-3})
    step, calls = training.train_step, []

    def diverging(*args, **kwargs):          # the second batch's loss overflows, as a bf16 step can
        calls.append(1)
        loss = step(*args, **kwargs)
        return loss * float("nan") if len(calls) == 2 else loss

    monkeypatch.setattr(training, "train_step", diverging)
    settings = {"epochs": 2, "pairs_per_epoch": 4, "batch_size": 2, "micro_batch": 1, "max_grad_norm": None}
    with pytest.raises(NonFiniteLossError, match=r"the loss of epoch 1, batch 2 is nan .*no weights are written"):
        training.train(ranker, groups, DATA, training.CandidateTriples(DATA, ["q1", "q3"]), lambda m: 0.0,
                       settings, seed=1)


def test_a_non_finite_step_loss_stops_the_step_loops_naming_the_step():
    from peftir.training.finite import NonFiniteLossError
    from peftir.training.steps import train_steps

    model = torch.nn.Linear(3, 1)
    inputs = torch.ones(2, 3)

    def loss_of(step):
        loss = model(inputs).pow(2).mean()
        return loss * float("inf") if step == 2 else loss          # the third step diverges

    with pytest.raises(NonFiniteLossError, match=r"the loss of step 3 of 5 is inf"):
        train_steps(model, loss_of, steps=5, lr=1e-3, log_every=2)
    other = torch.nn.Linear(3, 1)
    finite = train_steps(other, lambda step: other(inputs).pow(2).mean(), steps=4, lr=1e-3, log_every=2)
    assert len(finite) == 2 and all(math.isfinite(loss) for loss in finite)
