"""The execution seam: one object places every model and batch; the audit catches what goes around it; the batch
mechanics (accumulation, gradient cache, clipping) give the whole batch's gradient a chunk at a time."""
import pytest
import torch
from torch import nn

from peftir.execution import audit, gradients
from peftir.execution.seam import CPU, Execution, moved

from tiny import tiny_ranker


class Encoder(nn.Module):
    """Embeddings, dropout and a projection: enough for dropout masks to matter."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(50, 8)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(8, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(self.embed(ids).mean(1)))


def grads(model: nn.Module) -> list[torch.Tensor]:
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return grads


def test_auto_takes_the_gpu_where_there_is_one_else_the_cpu_and_sets_threads():
    execution = Execution.of({"device": "auto", "precision": "bf16"}, threads=1)
    if torch.cuda.is_available():
        assert execution.device.type == "cuda" and execution.used()["device"] == "cuda"
        assert execution.autocast == (torch.bfloat16 if torch.cuda.is_bf16_supported() else None)
    else:
        assert execution == CPU and execution.used() == {"device": "cpu", "precision": "fp32"}
    assert torch.get_num_threads() == 1


def test_the_cpu_asked_for_is_the_cpu_on_any_machine():
    assert Execution.of({"device": "cpu", "precision": "bf16"}) == CPU


def test_place_keeps_the_execution_on_the_model_and_inputs_moves_nested_batches():
    model = CPU.place(Encoder())
    assert model.execution is CPU
    batch = {"ids": torch.ones(2, 3, dtype=torch.long), "more": [torch.zeros(1)], "name": "kept"}
    assert moved(batch, torch.device("cpu"))["name"] == "kept"
    assert CPU.inputs(batch)["more"][0].device.type == "cpu"


def test_the_audit_records_placed_calls_and_nothing_else_when_all_goes_through_the_seam():
    with audit.recording("good") as record:
        model = CPU.place(Encoder())
        model(CPU.inputs(torch.randint(0, 50, (2, 3))))
        model(CPU.inputs(torch.randint(0, 50, (4, 3)))[:2])          # a view of a seam batch is one
    assert record.calls == 2 and record.violations == [] and record.models == [{"model": "Encoder", "device": "cpu"}]


def test_the_audit_names_a_model_called_without_being_placed():
    with audit.recording("unplaced") as record:
        Encoder()(torch.randint(0, 50, (2, 3)))
    assert record.violations == ["Encoder called without Execution.place"]


def test_the_audit_names_a_batch_built_outside_the_seam():
    with audit.recording("outside") as record:
        model = CPU.place(Encoder())
        model(torch.randint(0, 50, (2, 3)))
    assert len(record.violations) == 1 and "Execution.inputs did not hand out" in record.violations[0]


def test_the_audit_checks_a_rankers_own_batches_and_inner_calls_pass():
    with audit.recording("ranker") as record:
        ranker = CPU.place(tiny_ranker("colbert"))
        with torch.no_grad():
            ranker.score_pairs([[2000, 2001]], [[3000, 3001, 3002]])
    assert record.calls > 0 and record.violations == []


def test_the_audit_is_off_unless_asked():
    model = CPU.place(Encoder())
    assert all(not module._forward_pre_hooks for module in model.modules())


def test_accumulation_gives_the_whole_batchs_gradient():
    model = Encoder().eval()
    ids = torch.randint(0, 50, (6, 3))
    model(ids).pow(2).mean().backward()
    whole = grads(model)
    parts = gradients.split(ids, 4)
    assert [share for _, share in parts] == [4 / 6, 2 / 6]
    loss = gradients.accumulate(parts, lambda part: model(part).pow(2).mean())
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(whole, grads(model)))
    assert float(loss) == pytest.approx(float(model(ids).pow(2).mean().detach()), rel=1e-5)


def test_a_dict_batch_splits_row_wise_with_each_parts_share():
    batch = {"input_ids": torch.arange(10).view(5, 2), "labels": torch.arange(10, 20).view(5, 2)}
    parts = gradients.split(batch, 2)
    assert [share for _, share in parts] == [0.4, 0.4, 0.2]
    assert torch.equal(torch.cat([part["labels"] for part, _ in parts]), batch["labels"])
    assert [len(part["input_ids"]) for part, _ in parts] == [2, 2, 1]


def contrastive(vectors: list[torch.Tensor]) -> torch.Tensor:
    rows = torch.cat(vectors)
    return nn.functional.cross_entropy(rows @ rows.T, torch.arange(len(rows)))


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_the_gradient_cache_gives_the_whole_batchs_gradient_with_dropout_replayed(chunk):
    """Dropout is on: the second pass must draw the first pass's masks, or the cached gradient is another one."""
    model = Encoder().train()
    ids = torch.randint(0, 50, (6, 3))
    torch.manual_seed(7)
    direct = gradients.cached_gradient(CPU, [ids], lambda part: (0.0, model(part)), contrastive)
    whole = grads(model)
    torch.manual_seed(7)
    cached = gradients.cached_gradient(CPU, [ids[p] for p in gradients.chunks_of(6, chunk)],
                                       lambda part: (0.0, model(part)), contrastive)
    assert float(cached) == pytest.approx(float(direct), rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(whole, grads(model)))


def test_without_the_replay_the_cached_gradient_would_differ():
    """The check above has teeth: masks drawn afresh in the second pass change the gradient."""
    model = Encoder().train()
    ids = torch.randint(0, 50, (6, 3))
    torch.manual_seed(7)
    gradients.cached_gradient(CPU, [ids], lambda part: (0.0, model(part)), contrastive)
    whole = grads(model)

    class Forgetful(Execution):
        def restore_random_state(self, state) -> None:
            pass

    torch.manual_seed(7)
    gradients.cached_gradient(Forgetful(), [ids[:3], ids[3:]], lambda part: (0.0, model(part)), contrastive)
    assert not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(whole, grads(model)))


def test_the_random_state_covers_the_device_it_runs_on():
    cpu_state, device_state = CPU.random_state()
    assert device_state is None and torch.equal(cpu_state, torch.get_rng_state())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_cuda_generator_is_replayed_too():
    execution = Execution(torch.device("cuda"))
    state = execution.random_state()
    first = torch.rand(3, device="cuda")
    execution.restore_random_state(state)
    assert torch.equal(torch.rand(3, device="cuda"), first)


def test_clipping_scales_the_gradient_to_the_norm_and_none_leaves_it():
    weight = nn.Parameter(torch.zeros(2))
    weight.grad = torch.tensor([3.0, 4.0])
    assert gradients.clip([weight], None) is None and torch.equal(weight.grad, torch.tensor([3.0, 4.0]))
    assert float(gradients.clip([weight], 1.0)) == pytest.approx(5.0)
    assert torch.allclose(weight.grad, torch.tensor([0.6, 0.8]))


def test_a_library_saving_what_it_computes_is_not_taken_for_a_batch():
    with audit.recording("saving") as record:
        model = CPU.place(Encoder())
        with audit.bookkeeping():
            model(torch.randint(0, 50, (2, 3)))
        model(torch.randint(0, 50, (2, 3)))
    assert record.violation_count == 1


def test_a_call_on_no_data_is_configuration_not_a_forward_pass():
    with audit.recording("empty") as record:
        nn.Linear(1, 2)(torch.empty(0, 1))               # what AdapterHub does when its active adapters change
    assert record.violations == [] and record.calls == 0


def test_the_audit_sees_a_batch_before_a_methods_hooks_rewrite_it():
    """Prompt-tuning's hook prepends its prompts' mask to the batch's own: the batch is the seam's all the same."""
    from tiny import apply_method

    with audit.recording("prompt") as record:
        ranker = tiny_ranker("monobert")
        apply_method(ranker, "prompt")
        CPU.place(ranker)
        with torch.no_grad():
            ranker.score_pairs([[2000, 2001]], [[3000, 3001, 3002]])
    assert record.calls > 0 and record.violations == []


def test_every_backbone_the_systems_load_runs_its_attention_in_pytorchs_sdpa_kernels():
    """Scaled-dot-product attention (flash / memory-efficient kernels on a GPU, no s² matrix kept): each system's
    loader, on the embedded model (the same code path as a hub name)."""
    from peftir.clir.modular import load_encoder
    from peftir.contract.backbones import EMBEDDED, resolve
    from peftir.dense.train import encoder_of
    from peftir.models import backbone
    from peftir.splade.cross_encoder import build_cross_encoder
    from peftir.splade.encoder import masked_lm

    path = resolve(EMBEDDED)
    models = {"semi-siamese": backbone.load(EMBEDDED, 1).model, "splade": masked_lm(path, 1)[0],
              "splade reranker": build_cross_encoder(EMBEDDED, {"name": "ft"}, 32).encoder,
              "dense": encoder_of(EMBEDDED, 1)[0], "modular clir": load_encoder(path, True, False)[0]}
    assert {name: model.config._attn_implementation for name, model in models.items()} == \
        {name: "sdpa" for name in models}


def test_a_compiled_model_scores_and_learns_as_the_eager_one():
    """``execution.compile``: the Hugging Face model inside a ranker compiled in place (torch.compile; inductor's
    C++ kernels on a CPU), its parameter names unchanged, its scores and gradients those of the eager model."""
    from tiny import apply_method

    def run(execution: Execution):
        ranker = tiny_ranker("twinbert")          # no dropout: compiled code draws its own random numbers
        apply_method(ranker, "lora", lora={"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["query", "value"],
                                           "scaling": "alpha_over_r"})
        execution.place(ranker).eval()
        with torch.no_grad():
            scores = ranker.score_pairs([[2000, 2001], [2002]], [[3000, 3001, 3002], [3003] * 30])
        ranker.train()
        ranker.score_pairs([[2000]], [[3000, 3001]]).sum().backward()
        grads = {name: p.grad for name, p in ranker.named_parameters() if p.grad is not None}
        return scores, grads, list(ranker.state_dict())

    compiled = Execution.of({"device": "cpu", "precision": "fp32", "compile": True})
    assert compiled.compile and compiled.used()["compile"] is True
    (eager_scores, eager_grads, eager_names), (scores, grads, names) = run(CPU), run(compiled)
    assert names == eager_names and grads.keys() == eager_grads.keys()
    assert torch.allclose(scores, eager_scores, atol=1e-5)
    assert all(torch.allclose(grads[name], eager_grads[name], atol=1e-5) for name in grads)
