"""Rows per forward pass: what ``auto`` chooses per family at paper shapes, and what is fastest on this CPU.

    .venv/bin/python benchmarks/pass_sizes.py

Two measurements behind ``peftir.execution.passes``:

- **Chosen passes.** For each training loop of the paper configurations, at its paper shape (BERT-base, DistilBERT,
  RoBERTa-large, mBERT, their lengths and batches), the rows per pass ``auto`` takes on an 80 GB GPU in bf16 and on
  this machine's CPU in fp32 within a job's memory budget (the paper configuration's ``mem_mb`` of the rule, less the
  1.5 GB a job's process holds before its first pass), with the memory each pass is predicted to hold.
- **Throughput by pass size on the CPU.** The embedded default's monoBERT training step (MiniLM, 1 layer, triples of
  2 × 128 tokens) at 1 to 16 triples a pass; its reranking (monoBERT pairs of a 3–15-piece query and a 10–32-piece
  document, 1 layer, length-sorted as reranking sorts them) at 16 to 256 pairs a pass; and encoding with the whole
  MiniLM (6 layers, 128 tokens) at 8 to 256 texts a pass: rows or tokens per second, best of three, on the threads
  given (2 by default, as the laptop path).

Results go to ``results/benchmarks/pass_sizes.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch

from peftir.execution import passes

OUTPUT = Path("results/benchmarks/pass_sizes.json")
GPU_GB, CPU_PROCESS_GB = 80, 1.5
# (loop, backbone sizes: hidden, FFN, layers, heads, vocabulary, parameters, trainable; shape; batch rows; job mem_mb)
BERT = (768, 3072, 12, 12, 30522, 109_482_240)
LOOPS = [
    ("monoBERT train (16 triples, 2 × 512)", BERT, True, passes.Shape(1024, True, sequence=512), 16, 32000),
    ("TwinBERT train (16 triples, 22 + 2 × 982)", BERT, True, passes.Shape(1986, True, sequence=491), 16, 32000),
    ("ColBERT train (16 triples, 21 + 2 × 512)", BERT, True, passes.Shape(1045, True, sequence=512), 16, 32000),
    ("monoBERT rerank (pairs, 1,024)", BERT, False, passes.Shape(1024, False, sequence=512), 4096, 16000),
    ("SPLADE train (128 texts of 256, MLM head)", (768, 3072, 6, 12, 30522, 66_985_530), True,
     passes.Shape(256, True, heads=1), 128, 32000),
    ("DPT train (1,920 passages of 128 + 128 prompts)", (1024, 4096, 24, 16, 50265, 355_359_744), False,
     passes.Shape(256, True), 1920, 32000),
    ("Condenser pretrain (2,048 blocks of 128, +2 layers, 2 MLM)", (768, 3072, 14, 12, 30522, 109_482_240), True,
     passes.Shape(128, True, heads=2), 2048, 64000),
    ("coCondenser pretrain (4,096 spans of 34)", (768, 3072, 14, 12, 30522, 109_482_240), True,
     passes.Shape(34, True, heads=2), 4096, 64000),
    ("CLIR language adapter (64 blocks of 256, MLM, mBERT)", (768, 3072, 12, 12, 105879, 167_356_416), False,
     passes.Shape(256, True, heads=1), 64, 32000),
    ("CLIR ranking module (32 instances of 512, mBERT)", (768, 3072, 12, 12, 105879, 167_356_416), True,
     passes.Shape(512, True), 32, 32000),
]


def chosen() -> list[dict]:
    rows = []
    for name, (hidden, ffn, layers, heads, vocabulary, parameters), trains, shape, batch, mem_mb in LOOPS:
        encoder = passes.Encoder(hidden, ffn, layers, heads, vocabulary, parameters, parameters if trains else 0)
        gpu_free = int(GPU_GB * 1e9) - 4 * parameters
        cpu_free = int(mem_mb * 2**20 - CPU_PROCESS_GB * 1e9)
        gpu = passes.sized(passes.AUTO, batch, encoder, shape, gpu_free, True, "cuda")
        cpu = passes.sized(passes.AUTO, batch, encoder, shape, cpu_free, False, "cpu")
        rows.append({"loop": name, "batch": batch,
                     "gpu_80gb_bf16": gpu, "gpu_pass_gb": round(gpu * passes.row_bytes(encoder, shape, True, "cuda")
                                                                 / 1e9, 1),
                     "cpu_fp32": cpu, "cpu_budget_gb": round(cpu_free / 1e9, 1),
                     "cpu_pass_gb": round(cpu * passes.row_bytes(encoder, shape, False, "cpu") / 1e9, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def best_of(step, repeats: int = 3) -> float:
    step()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return min(times)


def cpu_throughput() -> list[dict]:
    from peftir.contract.backbones import EMBEDDED
    from peftir.models import backbone
    from peftir.semi_siamese import rankers
    from peftir.semi_siamese.loop import train_step

    rows = []
    settings = {"max_query_len": 20, "max_doc_len": 105, "max_seq_len": 128, "monobert": {"dropout": 0.1}}
    loaded = backbone.load(EMBEDDED, 1)
    ranker = rankers.build("monobert", loaded.model, loaded.tokenizer, settings)
    optimizer = torch.optim.Adam(ranker.parameters(), lr=1e-5)
    query, doc = list(range(2000, 2020)), list(range(3000, 3105))
    batch = [(query, doc, doc)] * 16
    for size in (1, 2, 4, 8, 16):
        seconds = best_of(lambda: train_step(ranker.train(), optimizer, batch, size))
        rows.append({"loop": "monoBERT train, MiniLM 1 layer", "rows_per_pass": size,
                     "tokens_per_s": round(16 * 2 * 128 / seconds)})
        print(json.dumps(rows[-1]), flush=True)
    generator = random.Random(0)
    queries = [[generator.randint(2000, 20000) for _ in range(generator.randint(3, 15))] for _ in range(2048)]
    docs = sorted(([generator.randint(2000, 20000) for _ in range(generator.randint(10, 32))] for _ in range(2048)),
                  key=len)
    settings = {**settings, "max_doc_len": 32}
    pairs = rankers.build("monobert", loaded.model, loaded.tokenizer, settings).eval()
    for size in (16, 32, 64, 128, 256):
        def rerank(size=size):
            with torch.inference_mode():
                for start in range(0, 2048, size):
                    pairs.score_pairs(queries[start:start + size], docs[start:start + size])
        seconds = best_of(rerank)
        rows.append({"loop": "monoBERT reranking, MiniLM 1 layer", "rows_per_pass": size,
                     "pairs_per_s": round(2048 / seconds)})
        print(json.dumps(rows[-1]), flush=True)
    whole = backbone.load(EMBEDDED)
    texts = torch.randint(2000, 20000, (256, 128))
    for size in (8, 16, 32, 64, 128, 256):
        def encode(size=size):
            with torch.no_grad():
                for start in range(0, 256, size):
                    whole.model.eval()(input_ids=texts[start:start + size])
        seconds = best_of(encode)
        rows.append({"loop": "encoding, MiniLM 6 layers", "rows_per_pass": size,
                     "tokens_per_s": round(256 * 128 / seconds)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps({"chosen": chosen(), "cpu_throughput": cpu_throughput()}, indent=1))


if __name__ == "__main__":
    main()
