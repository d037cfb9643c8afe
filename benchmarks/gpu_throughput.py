"""Training and encoding throughput of every backbone family the paper configurations use, fp32 against bf16.

    .venv/bin/python benchmarks/gpu_throughput.py --write     # on a GPU: the paper shapes; calibrates `peftir plan`
    .venv/bin/python benchmarks/gpu_throughput.py --device cpu --layers 2 --steps 1   # a quick check on a laptop
    .venv/bin/python benchmarks/gpu_throughput.py --passes 2 --only rankers   # the released code's micro-batches

Each workload is the pipeline's own training step at a paper's shape, on a randomly initialised model of the
family's size (speed does not depend on the weights; nothing is downloaded), placed by the execution seam in fp32 and
in bf16 autocast (TF32 for what stays fp32), its rows per forward pass sized by the execution as a job sizes them
(``--passes auto``, the default) or fixed (``--passes N``):

- ``monobert`` / ``twinbert`` / ``colbert``: BERT-base, a batch of 16 (query, relevant, non-relevant) triples of 512
  tokens (``peftir.semi_siamese.loop.train_step``: the pairwise loss, Adam), full fine-tuning and LoRA;
- ``splade``: DistilBERT with its MLM head, 32 queries × (relevant, negative) of 256 tokens, SPLADE's loss (through
  the gradient cache where a side does not fit one pass);
- ``dpt``: RoBERTa-large with deep prompts of 128, 8 queries × 30 passages of 128 tokens, the contrastive loss
  (``peftir.dense.train.retriever_update``);
- ``condenser``: BERT-base with a 2-layer Condenser head, 64 blocks of 128 tokens, both MLM losses.

Per workload: milliseconds per step, the rows per pass, trained tokens per second (the tokens the step puts through
the encoder), encoded tokens per second (a forward without gradients), the peak GPU memory of the step, and on a GPU
whose peak it knows (or ``--peak-tflops``) the fraction of the dense bf16 peak reached, counting 6 × encoder
parameters × tokens. ``--compile`` compiles the models as ``execution.compile`` does. Results go to
``results/benchmarks/gpu_throughput.json``; with ``--write`` the per-family rates also go to
``benchmarks/calibration.json`` (``measured``, with the GPU, date and commit), which ``peftir plan`` then uses in place
of its analytic rates.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import time
from pathlib import Path
from typing import Callable

import torch

from peftir.execution.passes import AUTO, Configured, Encoder, Shape
from peftir.execution.seam import Execution
from peftir.files import atomic_write

OUTPUT = Path("results/benchmarks/gpu_throughput.json")
CALIBRATION = Path(__file__).resolve().parent / "calibration.json"
# dense bf16 tensor-core peaks (TFLOP/s, without sparsity), from the vendors' data sheets
PEAK_BF16 = {"H100 80GB HBM3": 989.0, "H100 PCIe": 756.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0,
             "RTX 3090": 71.0, "RTX 4090": 165.0}
LR = {"ranker": 1e-4, "bert": 1e-5, "peft": 1e-4}
Step = Callable[[], int]           # one training step; returns the tokens it trained


def peak(device: torch.device, given: float | None) -> float | None:
    if given or device.type != "cuda":
        return given
    name = torch.cuda.get_device_name(device)
    return next((value for key, value in PEAK_BF16.items() if key in name), None)


def timed(step: Callable[[], int], steps: int, device: torch.device) -> tuple[float, int]:
    """Seconds per call of ``step`` (after two warm-up calls, which also compile under ``--compile``) and the tokens
    of one call."""
    for _ in range(2):
        tokens = step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps, tokens


RANKER_WORKLOADS = [f"{name}-{method}" for name in ("monobert", "twinbert", "colbert") for method in ("full", "lora")]


def rankers(execution: Execution, layers: int, workload: str,
            passes: Configured = AUTO) -> tuple[torch.nn.Module, Step, Step]:
    """A Semi-Siamese ranker on BERT-base at the paper's shape (``RANKER_WORKLOADS``: ranker-method): the training
    step a ``train`` job takes (``passes``: its ``micro_batch``) and an encoding pass of 32 pairs."""
    from transformers import BertConfig

    from peftir.models import backbone
    from peftir.semi_siamese import rankers as models
    from peftir.semi_siamese.contract import resolve_method
    from peftir.semi_siamese.loop import train_rows, train_step
    from peftir.semi_siamese.configured import apply

    settings = {"max_query_len": 20, "max_doc_len": 800, "max_seq_len": 512, "monobert": {"dropout": 0.1},
                "twinbert": {"pooling": "mean"}, "colbert": {"dim": 128}, "batch_size": 16, "micro_batch": passes}
    query, doc = list(range(2000, 2020)), list(range(3000, 3000 + 512 - 20 - 3))   # one full chunk
    methods = {"full": {"full": {}}, "lora": {"lora": {"rank": 16, "alpha": 32, "dropout": 0.1,
                                                       "target_modules": ["query", "value"],
                                                       "scaling": "alpha_over_r"}}}
    name, method = workload.split("-")
    encoder = backbone.from_config(BertConfig(num_hidden_layers=layers))
    ranker = models.build(name, encoder.model, encoder.tokenizer, settings)
    optimizer = torch.optim.Adam(apply(ranker, resolve_method(method, methods[method]), LR))
    execution.place(ranker)
    rows = train_rows(ranker, settings)
    batch = [(query, doc, doc)] * 16
    # what one triple puts through the encoder: monoBERT two pairs, a bi-encoder the query once and two documents
    per_triple = {"monobert": 2 * (len(query) + len(doc) + 3), "twinbert": len(query) + 2 + 2 * (len(doc) + 2),
                  "colbert": settings["max_query_len"] + 1 + 2 * (len(doc) + 3)}[name]

    def train() -> int:
        ranker.train()
        train_step(ranker, optimizer, batch, rows)
        return 16 * per_triple

    def encode() -> int:
        with torch.no_grad():
            ranker.eval().score_pairs([query] * 32, [doc] * 32)
        return 32 * per_triple // 2

    return ranker.bert, train, encode


def splade(execution: Execution, layers: int, passes: Configured = AUTO) -> tuple[torch.nn.Module, Step, Step]:
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForMaskedLM

    from peftir.contract.backbones import EMBEDDED, resolve
    from peftir.execution.gradients import cached_gradient, chunks_of
    from peftir.splade.encoder import DOCUMENT, QUERY, with_method
    from peftir.splade.losses import splade_loss

    lm = DistilBertForMaskedLM(DistilBertConfig(n_layers=layers))
    tokenizer = AutoTokenizer.from_pretrained(resolve(EMBEDDED))
    encoder = execution.place(with_method(lm, tokenizer, {"name": "ft"}, {QUERY: 256, DOCUMENT: 256}))
    optimizer = torch.optim.AdamW([p for p in encoder.parameters() if p.requires_grad], lr=8e-5)
    text = " ".join(["retrieval"] * 254)
    regularisation = {"lambda_q": 5e-4, "lambda_d": 9e-5, "warmup_steps": 50000}
    rows = execution.rows_per_pass("train", passes, 32, Encoder.of(lm.config, encoder), Shape(256, True, heads=1))
    sides = [(side, role) for side, role in enumerate((QUERY, DOCUMENT, DOCUMENT))]
    chunks = [(side, role, part) for side, role in sides for part in chunks_of(32, rows)]

    def loss(representations: list[torch.Tensor]) -> torch.Tensor:
        queries, positives, negatives = (torch.cat([r for (side, _, _), r in zip(chunks, representations)
                                                    if side == wanted]) for wanted in (0, 1, 2))
        return splade_loss(queries, positives, negatives, 1, regularisation)["loss"]

    def train() -> int:              # queries, positives, negatives: as train_splade's update runs them
        with execution.training_step():
            optimizer.zero_grad()
            cached_gradient(execution, chunks, lambda chunk: (0.0, encoder.encode([text] * (chunk[2].stop -
                                                                                             chunk[2].start),
                                                                                  chunk[1])),
                            loss, cache=len(chunks) > len(sides))
            optimizer.step()
        return 96 * 256

    def encode() -> int:
        with torch.no_grad():
            encoder.eval().encode([text] * 64, DOCUMENT)
        encoder.train()
        return 64 * 256

    return lm.distilbert, train, encode


def dpt(execution: Execution, layers: int, passes: Configured = AUTO) -> tuple[torch.nn.Module, Step, Step]:
    from transformers import AutoTokenizer, RobertaConfig, RobertaModel

    from peftir.contract.backbones import EMBEDDED, resolve
    from peftir.dense.deep_prompt import deep_prompts
    from peftir.dense.train import retriever_update
    from peftir.retrieval.dense_retriever import PASSAGE, DenseRetriever

    config = RobertaConfig(hidden_size=1024, num_hidden_layers=layers, num_attention_heads=16, intermediate_size=4096,
                           max_position_embeddings=514, vocab_size=30522)
    encoder = deep_prompts(RobertaModel(config, add_pooling_layer=False), 128, False, 512, 0.1)
    tokenizer = AutoTokenizer.from_pretrained(resolve(EMBEDDED))       # ids only matter for speed: BERT's pieces
    retriever = execution.place(DenseRetriever(encoder, tokenizer, 32, 128))
    optimizer = torch.optim.AdamW([p for p in retriever.parameters() if p.requires_grad], lr=7e-3)
    texts = {f"d{i}": " ".join(["passage"] * 126) for i in range(30)}
    update = retriever_update(retriever, execution, {f"q{i}": "a query of some words" for i in range(8)},
                              lambda ids: {i: texts[i] for i in ids}, passes, 8 * 30)
    batch = [(f"q{i}", list(texts)) for i in range(8)]

    def train() -> int:
        with execution.training_step():
            optimizer.zero_grad()
            update(batch)
            optimizer.step()
        return 8 * (32 + 30 * 128)

    def encode() -> int:
        with torch.no_grad():
            retriever.eval().encode(list(texts.values()) * 4, PASSAGE)
        retriever.train()
        return 120 * 128

    return encoder.base_model, train, encode


def condenser(execution: Execution, layers: int, passes: Configured = AUTO) -> tuple[torch.nn.Module, Step, Step]:
    from transformers import BertConfig, BertForMaskedLM

    from peftir.dense.pretraining.condenser import Condenser
    from peftir.dense.pretraining.retrieval_pretraining import pretraining_update

    model = execution.place(Condenser(BertForMaskedLM(BertConfig(num_hidden_layers=layers)), max(1, layers // 2), 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(1000, 20000, (64, 128))
    labels = torch.where(torch.rand(ids.shape) < 0.15, ids, torch.full_like(ids, -100))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    rows = execution.rows_per_pass("train", passes, 64, Encoder.of(model.lm.config, model, extra_layers=2),
                                   Shape(128, True, heads=2))
    update = pretraining_update("condenser", model, execution, rows)

    def train() -> int:
        with execution.training_step():
            optimizer.zero_grad()
            update(batch)
            optimizer.step()
        return 64 * 128

    def encode() -> int:
        with torch.no_grad(), execution.precision():
            model.eval().lm.bert(**execution.inputs({"input_ids": ids, "attention_mask": batch["attention_mask"]}))
        model.train()
        return 64 * 128

    return model.lm.bert, train, encode


FAMILIES = {"splade": ("distilbert", 6, splade), "dpt": ("roberta", 24, dpt), "condenser": ("bert", 12, condenser)}


def rows_per_pass(value: str) -> Configured:
    return value if value == AUTO else int(value)


def commit() -> str | None:
    """The checkout's commit (what the rates were measured with), None outside a git checkout."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent)
    return done.stdout.strip() or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--layers", type=int, help="layers of every model (default: each family's own)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--only", nargs="+", help="workloads to run (rankers, splade, dpt, condenser)")
    parser.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak, if not known here")
    parser.add_argument("--write", action="store_true", help="put the rates in benchmarks/calibration.json")
    parser.add_argument("--passes", type=rows_per_pass, default=AUTO,
                        help="rows per forward pass of every step: auto (the execution's, as jobs) or a number")
    parser.add_argument("--compile", action="store_true", help="compile the models (execution.compile: true)")
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.write and device.type != "cuda":
        parser.error("--write records GPU rates: run it on a CUDA device")
    bf16_peak = peak(device, args.peak_tflops)
    results = []
    for precision in ("fp32", "bf16"):
        # what execution.precision sets up (on a CPU too, where jobs would stay fp32: to time it)
        execution = Execution(device, torch.bfloat16 if precision == "bf16" else None, args.compile,
                              tf32=precision == "bf16")       # TF32 in the training steps, as a job's
        workloads = {}                 # built one at a time, just before being timed, so one is on the GPU at once
        if not args.only or "rankers" in args.only:
            for name in RANKER_WORKLOADS:
                workloads[name] = ("bert", 12, lambda name=name: rankers(execution, args.layers or 12, name,
                                                                         args.passes))
        for name, (family, layers, build) in FAMILIES.items():
            if not args.only or name in args.only:
                workloads[name] = (family, layers, lambda build=build, layers=layers: build(
                    execution, args.layers or layers, args.passes))
        for name, (family, layers, build) in workloads.items():
            torch.manual_seed(0)
            encoder, train, encode = build()
            seconds, tokens = timed(train, args.steps, device)
            peak_gb = torch.cuda.max_memory_allocated(device) / 1e9 if device.type == "cuda" else None
            encoding, encoded = timed(encode, args.steps, device)
            params = sum(p.numel() for p in encoder.parameters())
            achieved = 6 * params * tokens / seconds / 1e12
            chosen = execution.chosen["train"]
            result = {"workload": name, "family": family, "layers": args.layers or layers, "precision": precision,
                      "rows_per_pass": f"{chosen['rows']}/{chosen['of']}", "ms_per_step": round(seconds * 1e3, 1),
                      "train_tokens_per_s": round(tokens / seconds), "infer_tokens_per_s": round(encoded / encoding),
                      "tflops_6nd": round(achieved, 1),
                      "fraction_of_bf16_peak": round(achieved / bf16_peak, 3) if bf16_peak else None,
                      "peak_gpu_gb": round(peak_gb, 2) if peak_gb is not None else None,
                      "predicted_pass_gb": chosen["predicted_gb"]}
            print(json.dumps(result), flush=True)
            results.append(result)
            del encoder, train, encode
            if device.type == "cuda":
                torch.cuda.empty_cache()
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    about = {"device": gpu, "bf16_peak_tflops": bf16_peak, "torch": torch.__version__, "commit": commit(),
             "passes": args.passes, "compile": args.compile}
    OUTPUT.write_text(json.dumps({"about": about, "results": results}, indent=1))
    if args.write:
        table = json.loads(CALIBRATION.read_text())
        kept = {(row["family"], row["layers"], row["precision"]): row for row in table["measured"]}
        measured = set()
        for row in results:          # one rate per family: its first workload (monobert-full for BERT), replacing
            key = (row["family"], row["layers"], row["precision"])          # an older measurement
            if key in measured:
                continue
            measured.add(key)
            kept[key] = {
                "family": row["family"], "layers": row["layers"], "precision": row["precision"],
                "train_tokens_per_s": row["train_tokens_per_s"], "infer_tokens_per_s": row["infer_tokens_per_s"],
                "workload": row["workload"], "gpu": gpu, "date": datetime.date.today().isoformat(),
                "commit": about["commit"]}
        table["measured"] = sorted(kept.values(), key=lambda row: (row["family"], row["layers"], row["precision"]))
        with atomic_write(CALIBRATION) as handle:
            handle.write(json.dumps(table, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
