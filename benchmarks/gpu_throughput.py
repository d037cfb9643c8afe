"""Training throughput of the three rankers at the paper's shape, fp32 against bf16 autocast.

    .venv/bin/python benchmarks/gpu_throughput.py                 # on a GPU: BERT-base, 16 pairs × 512 tokens
    .venv/bin/python benchmarks/gpu_throughput.py --device cpu --layers 2 --steps 2   # a quick check on a laptop

For monoBERT, TwinBERT and ColBERT with full fine-tuning and LoRA, it times training steps as the
training loop takes them (16 (query, relevant, non-relevant) pairs, the pairwise loss, Adam; micro-batches
as configured) on a randomly initialised BERT-base-shaped encoder (speed does not depend on the weights,
and nothing is downloaded), in fp32 and with ``execution.precision: bf16`` (the encoder in bf16 autocast,
TF32 for what stays fp32). It reports milliseconds per step, tokens per second and, on a GPU whose peak it
knows (or ``--peak-tflops``), the fraction of the dense bf16 peak reached, counting 6 × encoder parameters
× tokens per step as the issue's measurement did. Results go to ``results/benchmarks/gpu_throughput.json``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers.models.bert.modeling_bert import BertConfig

from peftir.layout import resolve_method
from peftir.methods.attach import apply
from peftir.rankers import backbone, models
from peftir.training.loop import pairwise_loss

OUTPUT = Path("results/benchmarks/gpu_throughput.json")
# dense bf16 tensor-core peaks (TFLOP/s, without sparsity), from the vendors' data sheets
PEAK_BF16 = {"H100 80GB HBM3": 989.0, "H100 PCIe": 756.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0,
             "RTX 3090": 71.0, "RTX 4090": 165.0}
METHODS = {"full": {"full": {}}, "lora": {"lora": {"rank": 16, "alpha": 32, "dropout": 0.1,
                                                   "target_modules": ["query", "value"], "scaling": "alpha_over_r"}}}
LR = {"ranker": 1e-4, "bert": 1e-5, "peft": 1e-4}


def peak(device: torch.device, given: float | None) -> float | None:
    if given or device.type != "cuda":
        return given
    name = torch.cuda.get_device_name(device)
    return next((value for key, value in PEAK_BF16.items() if key in name), None)


def step_time(ranker: models.Ranker, groups: list, pairs: int, micro: int, query: list[int], doc: list[int],
              steps: int) -> float:
    """Seconds per training step (after two warm-up steps), as the training loop takes one."""
    optimizer = torch.optim.Adam(groups)
    ranker.train()

    def one_step() -> None:
        optimizer.zero_grad()
        for _ in range(pairs // micro):
            scores = ranker.score_pairs([query] * 2 * micro, [doc] * 2 * micro)
            (pairwise_loss(scores[:micro], scores[micro:]) * micro / pairs).backward()
        optimizer.step()

    for _ in range(2):
        one_step()
    if ranker.device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        one_step()
    if ranker.device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--layers", type=int, default=12, help="encoder layers (BERT-base: 12)")
    parser.add_argument("--seq", type=int, default=512, help="max_seq_len (paper: 512)")
    parser.add_argument("--pairs", type=int, default=16, help="pairs per step (paper: 16)")
    parser.add_argument("--micro", type=int, nargs="+", default=[2, 16], help="micro-batches (paper: 2)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak, if not known here")
    args = parser.parse_args()
    device = torch.device(args.device)
    settings = {"max_query_len": 20, "max_doc_len": 800, "max_seq_len": args.seq, "monobert": {"dropout": 0.1},
                "twinbert": {"pooling": "mean"}, "colbert": {"dim": 128}}
    query, doc = list(range(2000, 2020)), list(range(3000, 3000 + args.seq - 20 - 3))   # one full chunk
    bf16_peak = peak(device, args.peak_tflops)
    results = []
    for ranker_name in ("monobert", "twinbert", "colbert"):
        for method in METHODS:
            for precision in ("fp32", "bf16"):
                for micro in args.micro:
                    torch.manual_seed(0)
                    encoder = backbone.from_config(BertConfig(num_hidden_layers=args.layers))
                    ranker = models.build(ranker_name, encoder.model, encoder.tokenizer, settings)
                    groups = apply(ranker, resolve_method(method, METHODS[method]), LR)
                    ranker.to(device)
                    # what execution.precision sets up (on a CPU too, where jobs would stay fp32: to time it)
                    ranker.autocast = torch.bfloat16 if precision == "bf16" else None
                    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "bf16"
                    seconds = step_time(ranker, groups, args.pairs, micro, query, doc, args.steps)
                    tokens = args.pairs * 2 * (len(query) + len(doc) + 3)
                    params = sum(p.numel() for p in ranker.bert.parameters())
                    achieved = 6 * params * tokens / seconds / 1e12
                    result = {"ranker": ranker_name, "method": method, "precision": precision, "micro_batch": micro,
                              "ms_per_step": round(seconds * 1e3, 1), "tokens_per_s": round(tokens / seconds),
                              "tflops_6nd": round(achieved, 1),
                              "fraction_of_bf16_peak": round(achieved / bf16_peak, 3) if bf16_peak else None}
                    print(json.dumps(result), flush=True)
                    results.append(result)
                    del ranker, groups, encoder
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    about = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
             "layers": args.layers, "seq": args.seq, "pairs": args.pairs, "bf16_peak_tflops": bf16_peak,
             "torch": torch.__version__}
    OUTPUT.write_text(json.dumps({"about": about, "results": results}, indent=1))


if __name__ == "__main__":
    main()
