"""Mixed precision: the encoder in bf16 autocast, everything after it in fp32; on GPUs only by default.

CPUs here run bf16 autocast too (slowly), which lets these tests check the wiring that GPUs use.
"""
import pytest
import torch

from peftir.execution.seam import Execution
from peftir.app.rescore import ACROSS_PRECISIONS

from tiny import apply_method, tiny_ranker

QUERIES, DOCS = [[2000, 2001], [2002]], [[3000, 3001, 3002], [3003, 3004]]
CPU_BF16 = Execution(torch.device("cpu"), torch.bfloat16)     # what `precision: bf16` is on a GPU, on the CPU


def test_bf16_is_a_gpu_setting_the_cpu_stays_fp32():
    assert Execution.of({"device": "cpu", "precision": "bf16"}).autocast is None
    assert Execution.of({"device": "cpu", "precision": "fp32"}).used() == {"device": "cpu", "precision": "fp32"}
    assert tiny_ranker("colbert").execution.used() == {"device": "cpu", "precision": "fp32"}


@pytest.mark.parametrize("name", ["monobert", "twinbert", "colbert"])
def test_the_encoder_runs_in_bf16_and_the_scores_stay_fp32(name):
    ranker = tiny_ranker(name).eval()
    with torch.no_grad():
        full = ranker.score_pairs(QUERIES, DOCS)
        seen = []
        ranker.bert.encoder.layer[0].attention.self.query.register_forward_hook(
            lambda module, args, out: seen.append(out.dtype))
        CPU_BF16.place(ranker)
        mixed = ranker.score_pairs(QUERIES, DOCS)
    assert seen and set(seen) == {torch.bfloat16}
    assert mixed.dtype == torch.float32 and ranker.execution.used()["precision"] == "bf16"
    assert torch.allclose(mixed, full, rtol=ACROSS_PRECISIONS, atol=ACROSS_PRECISIONS)
    assert not torch.equal(mixed, full)


@pytest.mark.parametrize("method, entries", [
    ("full", {}), ("prompt", {}), ("prefix", {}), ("prefix", {"prefix": {"length": 3, "bottleneck": 8, "kind": "kv"}}),
    ("lora", {}), ("prefix_lora", {}), ("ss_prefix", {}), ("ss_lora", {}),
])
def test_every_kind_of_module_trains_under_bf16_autocast(method, entries):
    ranker = tiny_ranker("colbert")
    groups = apply_method(ranker, method, **entries)
    CPU_BF16.place(ranker)
    trained = [p for group in groups for p in group["params"]]
    before = [p.detach().clone() for p in trained]
    optimizer = torch.optim.Adam(groups)
    ranker.train()
    ranker.score_pairs(QUERIES, DOCS).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in trained)
    optimizer.step()
    assert all(p.dtype == torch.float32 for p in trained)         # weights and Adam's state stay fp32
    assert any(not torch.equal(p, b) for p, b in zip(trained, before))


def test_a_measurement_of_bf16_on_a_cpu_asks_for_it_in_the_environment(monkeypatch):
    monkeypatch.setenv("PEFTIR_CPU_BF16", "1")
    assert Execution.of({"device": "cpu", "precision": "bf16"}).used()["precision"] == "bf16"
    assert Execution.of({"device": "cpu", "precision": "fp32"}).autocast is None


GPU_BF16 = Execution(torch.device("cpu"), torch.bfloat16, tf32=True)   # a GPU job's TF32 choice, its flag on a CPU


def test_a_job_starts_with_tf32_off_and_only_its_training_steps_turn_it_on():
    """Searches and scores between steps (validation, reranking) run in fp32; the flag is process-wide, so a step
    restores what it found."""
    torch.backends.cuda.matmul.allow_tf32 = True
    assert not Execution.of({"device": "cpu", "precision": "bf16"}).tf32
    assert torch.backends.cuda.matmul.allow_tf32 is False
    with GPU_BF16.training_step():
        assert torch.backends.cuda.matmul.allow_tf32 is True
    assert torch.backends.cuda.matmul.allow_tf32 is False
    with Execution().training_step():                    # fp32 jobs keep full fp32 in their steps too
        assert torch.backends.cuda.matmul.allow_tf32 is False
    assert GPU_BF16.used()["tf32"] == "training steps" and "tf32" not in Execution().used()


def test_the_training_loops_steps_run_in_tf32_and_their_validations_do_not():
    from peftir.training.steps import train_updates

    model = GPU_BF16.place(torch.nn.Linear(2, 1))
    during, after = [], []

    def update(step: int) -> torch.Tensor:
        during.append(torch.backends.cuda.matmul.allow_tf32)
        loss = model(torch.ones(1, 2)).sum()
        loss.backward()
        return loss.detach()

    train_updates(model, update, 2, 1e-3, after=lambda n: after.append(torch.backends.cuda.matmul.allow_tf32))
    assert during == [True, True] and after == [False, False]


def test_a_semi_siamese_step_runs_in_tf32_where_the_execution_chose_it(monkeypatch):
    from peftir.semi_siamese import loop

    ranker = GPU_BF16.place(tiny_ranker("monobert"))
    seen = []
    score = loop.triple_loss
    monkeypatch.setattr(loop, "triple_loss",
                        lambda ranker, part: seen.append(torch.backends.cuda.matmul.allow_tf32) or score(ranker, part))
    optimizer = torch.optim.Adam(ranker.parameters(), lr=1e-5)
    loop.train_step(ranker, optimizer, [(QUERIES[0], DOCS[0], DOCS[1])] * 2, rows=1)
    assert seen == [True, True] and torch.backends.cuda.matmul.allow_tf32 is False


def test_a_part_trained_inside_a_placed_model_takes_the_execution_it_is_given():
    """The MLM head fitted inside a placed BertForMaskedLM is not placed itself: its steps run in the execution the
    job hands over, not in a CPU default."""
    from peftir.training.steps import train_steps

    head, seen = torch.nn.Linear(2, 1), []

    def loss(step: int) -> torch.Tensor:
        seen.append(torch.backends.cuda.matmul.allow_tf32)
        return head(torch.ones(1, 2)).sum()

    train_steps(head, loss, 2, 1e-3, execution=GPU_BF16)
    assert seen == [True, True]
