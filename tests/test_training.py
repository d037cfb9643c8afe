"""Training: the paper's loss, triple sampling, best-epoch selection, seeded reproducibility."""
import math
import random

import pytest
import torch

from peftir.methods.learned import learned_state
from peftir.rankers.configured import seed_everything
from peftir.rankers.inputs import RankingData
from peftir.training import loop as training

from tiny import apply_method, tiny_ranker


def test_pairwise_loss_is_one_minus_softmax_of_positive():
    pos, neg = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 1.0])
    expected = ((1 - math.exp(2) / (math.exp(2) + 1)) + (1 - 1 / (1 + math.e))) / 2
    assert training.pairwise_loss(pos, neg).item() == pytest.approx(expected)
    assert training.pairwise_loss(torch.tensor([5.0]), torch.tensor([-5.0])) < 0.01


def test_loss_gradient_raises_positive_and_lowers_negative():
    pos, neg = torch.tensor([0.3], requires_grad=True), torch.tensor([0.1], requires_grad=True)
    training.pairwise_loss(pos, neg).backward()
    assert pos.grad.item() < 0 < neg.grad.item()


DATA = RankingData(queries={"q1": [1], "q2": [2], "q3": [3]},
                   docs={d: [9] for d in "abcdef"},
                   candidates={"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"d": 1.0}, "q3": {"e": 1.0, "f": 0.5}},
                   qrels={"q1": {"a": 1, "c": 0, "z": 1}, "q2": {"d": 1}, "q3": {"e": 0}})


def test_only_queries_with_a_relevant_and_a_nonrelevant_candidate_train():
    assert training.trainable_queries(DATA, ["q1", "q2", "q3"]) == ["q1"]


def test_triples_take_positives_from_relevant_candidates_and_negatives_from_the_rest():
    triples = training.sample_triples(random.Random(0), DATA, ["q1"], 200)
    assert {pos for _, pos, _ in triples} == {"a"}            # 'z' is relevant but not a candidate
    assert {neg for _, _, neg in triples} == {"b", "c"}        # judged non-relevant and unjudged


def test_training_keeps_the_best_validation_epoch():
    ranker = tiny_ranker("twinbert")
    groups = apply_method(ranker, "full", {"ranker": 1e-3, "bert": 1e-3, "peft": 1e-3})
    scores = iter([0.2, 0.5, 0.3])
    states = []

    def validate(model):
        states.append(learned_state(model))
        return next(scores)

    settings = {"epochs": 3, "pairs_per_epoch": 4, "batch_size": 2, "micro_batch": 1}
    result = training.train(ranker, groups, DATA, ["q1", "q3"], validate, settings, seed=1)
    assert result.best_epoch == 2 and result.best_score == 0.5
    assert all(torch.equal(result.best_state[k], states[1][k]) for k in states[1])
    assert not all(torch.equal(result.best_state[k], states[2][k]) for k in states[2])


def test_same_seed_same_weights():
    def run(seed):
        seed_everything(seed)
        ranker = tiny_ranker("colbert")
        groups = apply_method(ranker, "full", {"ranker": 1e-3, "bert": 1e-3, "peft": 1e-3})
        settings = {"epochs": 1, "pairs_per_epoch": 4, "batch_size": 2, "micro_batch": 2}
        return training.train(ranker, groups, DATA, ["q1"], lambda m: 0.0, settings, seed).best_state
    first, again = run(3), run(3)
    assert all(torch.equal(first[k], again[k]) for k in first)
