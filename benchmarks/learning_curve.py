"""How much the embedded default's rankers learn: test effectiveness against budget, on vaswani.

    .venv/bin/python benchmarks/learning_curve.py                  # the grid below (hours on 2 cores)
    .venv/bin/python benchmarks/learning_curve.py --layers 1 --doc-len 32 --folds 1   # one point's curve
    .venv/bin/python benchmarks/learning_curve.py --plot           # the figure from what was measured

The default configuration has to fit a laptop, so its budget (backbone layers kept, document length,
training pairs) decides whether its tables mean anything. For TwinBERT and ColBERT, each with full
fine-tuning and LoRA, this trains on vaswani's folds (the embedded default's seeded 5 folds, BM25
candidates, the training loop and rankers of the pipeline, one seed) and scores the test fold's
BM25 top ``--depth`` after 0, 16, 32, … pairs, for each number of layers and document length asked
for; the untrained backbone's zero-shot reranking (``peftir.semi_siamese.zero_shot``) and BM25 are the
reference lines. Each trained point also records its seconds. Results accumulate in
``results/benchmarks/learning-curve/results.jsonl`` (a rerun skips what is there); ``--plot`` draws
``learning_curve.png``. It needs vaswani where ir_datasets finds it (it downloads it on a machine with
internet; tests copy ``../shared/irds``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import yaml

ROOT = Path("results/benchmarks/learning-curve")
CONFIG = yaml.safe_load(Path("config.yaml").read_text())
METRICS = ["P@20", "nDCG@5", "nDCG@20"]


def prepare(root: Path):
    """vaswani exported, folded and ranked by BM25 with the pipeline's own functions (once)."""
    from peftir.data.export import export_dataset
    from peftir.data.folds import assign_folds
    from peftir.models.inputs import Collection
    from peftir.retrieval.anserini import bm25_search, index_collection

    data = root / "data"
    collection = Collection(queries=str(data / "queries.tsv"), qrels=str(data / "qrels.txt"),
                            docs=str(data / "corpus" / "docs.jsonl"), docs_lookup=str(data / "docs.lookup.sqlite"),
                            folds=str(data / "folds.json"))
    if not (data / "bm25.run").exists():
        spec = CONFIG["datasets"]["vaswani"]
        export_dataset(spec, collection.docs, collection.docs_lookup, data / "empty-docs.txt", collection.queries,
                       collection.qrels, data / "info.json")
        assign_folds("vaswani", spec, collection.queries, collection.folds)
        index_collection(collection.docs, data / "info.json", root / "index", threads=2)
        bm25_search(root / "index", collection.queries, collection.folds, data / "bm25.run", data / "bm25.meta.yaml",
                    {**CONFIG["bm25"], "splits": None}, "vaswani", threads=2)
    return collection, str(data / "bm25.run")


def _settings(doc_len: int) -> dict:
    return {**CONFIG["ranker"], "max_doc_len": doc_len, "max_seq_len": max(CONFIG["ranker"]["max_seq_len"],
                                                                           doc_len + 2)}


def _scores(run: dict, qrels: dict, qids: list[str]) -> dict:
    from peftir.evaluation.metrics import evaluate_run, metric_summary

    return metric_summary(evaluate_run(run, qrels, METRICS, qids), METRICS)["mean"]


def references(collection, candidates: str, layers: int, doc_len: int, depth: int, fold: str) -> dict:
    """BM25 and the untrained backbone on the fold's test queries."""
    from peftir.data import folds
    from peftir.data.trec import read_qrels, read_run
    from peftir.semi_siamese.zero_shot import encoder, zero_shot_scores

    test = folds.rotation(folds.read_folds(collection.folds), fold)["test"]
    qrels = read_qrels(collection.qrels)
    model = encoder({"name": CONFIG["backbone"]["name"], "layers": layers}, {"device": "cpu"})
    zero = zero_shot_scores(model, collection, candidates, test, _settings(doc_len), {"depth": depth, "batch_size": 64})
    return {"bm25": _scores(read_run(candidates, test, depth), qrels, test), "zero_shot": _scores(zero, qrels, test)}


def curve(collection, candidates: str, ranker: str, method: str, layers: int, doc_len: int, depth: int,
          fold: str, seed: int, checkpoints: list[int], lr_scale: float = 1.0, batch: int = 8) -> list[dict]:
    """Test effectiveness of one ranker × method after each checkpoint's number of training pairs."""
    from peftir.data import folds
    from peftir.execution.seam import Execution
    from peftir.semi_siamese.configured import configured_ranker, ranking_data, seed_everything
    from peftir.semi_siamese.contract import resolve_method
    from peftir.semi_siamese.loop import CandidateTriples, train
    from peftir.semi_siamese.rerank import rerank

    seed_everything(seed)
    settings = _settings(doc_len)
    lr = {key: value * lr_scale for key, value in CONFIG["training"]["lr"].items()}
    model, groups, tokenizer = configured_ranker(
        ranker, {"name": CONFIG["backbone"]["name"], "layers": layers}, settings,
        resolve_method(method, CONFIG["methods"]), lr, Execution.of(None, threads=2))
    split = folds.rotation(folds.read_folds(collection.folds), fold)
    train_data = ranking_data(collection, candidates, split["train"], 100, tokenizer, settings)
    test_data = ranking_data(collection, candidates, split["test"], depth, tokenizer, settings)
    step = checkpoints[0] if checkpoints[0] else checkpoints[1]
    points, start = [], time.time()

    def measure(trained, pairs: int) -> float:
        scores = _scores(rerank(trained, test_data, split["test"], 64, desc="test"), test_data.qrels, split["test"])
        points.append({"pairs": pairs, "seconds": round(time.time() - start, 1), **scores})
        return scores["P@20"]

    if 0 in checkpoints:
        measure(model, 0)
    epochs = iter(range(1, max(checkpoints) // step + 1))

    def validate(trained) -> float:          # after every epoch of ``step`` pairs: test at the checkpoints
        pairs = next(epochs) * step
        return measure(trained, pairs) if pairs in checkpoints else 0.0

    training = {**CONFIG["training"], "epochs": max(checkpoints) // step, "pairs_per_epoch": step,
                "batch_size": batch, "micro_batch": batch}
    train(model, groups, train_data, CandidateTriples(train_data, split["train"]), validate, training, seed)
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rankers", nargs="+", default=["twinbert", "colbert"])
    parser.add_argument("--methods", nargs="+", default=["full", "lora"])
    parser.add_argument("--layers", nargs="+", type=int, default=[1, 2, 3, 6])
    parser.add_argument("--doc-len", nargs="+", type=int, default=[32, 64])
    parser.add_argument("--checkpoints", nargs="+", type=int, default=[0, 16, 32, 64, 128, 256, 512])
    parser.add_argument("--folds", nargs="+", default=["1", "2", "3", "4", "5"])
    parser.add_argument("--depth", type=int, default=CONFIG["rerank"]["depth"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lr-scale", type=float, default=1.0, help="all learning rates times this (default: Table 8's)")
    parser.add_argument("--batch", type=int, default=CONFIG["training"]["batch_size"], help="pairs per Adam step")
    parser.add_argument("--plot", action="store_true", help="draw the figure from the results so far")
    parser.add_argument("--output", type=Path, default=ROOT / "learning_curve.png", help="where --plot draws")
    args = parser.parse_args()
    results = ROOT / "results.jsonl"
    if args.plot:
        plot(results, args.output)
        return
    collection, candidates = prepare(ROOT)
    done = {json.dumps(r["key"], sort_keys=True) for r in map(json.loads, results.open())} if results.exists() else set()
    with results.open("a") as out:
        for layers in args.layers:
            for doc_len in args.doc_len:
                for fold in args.folds:
                    jobs = [("reference", None, None)] + [("trained", r, m) for r in args.rankers for m in args.methods]
                    for kind, ranker, method in jobs:
                        key = {"kind": kind, "ranker": ranker, "method": method, "layers": layers, "doc_len": doc_len,
                               "fold": fold, "depth": args.depth, "seed": args.seed}
                        if kind == "trained" and (args.lr_scale, args.batch) != (1.0, CONFIG["training"]["batch_size"]):
                            key.update(lr_scale=args.lr_scale, batch=args.batch)
                        if json.dumps(key, sort_keys=True) in done:
                            continue
                        found = (references(collection, candidates, layers, doc_len, args.depth, fold)
                                 if kind == "reference" else
                                 curve(collection, candidates, ranker, method, layers, doc_len, args.depth, fold,
                                       args.seed, args.checkpoints, args.lr_scale, args.batch))
                        out.write(json.dumps({"key": key, "result": found}) + "\n")
                        out.flush()
                        print(json.dumps(key), flush=True)


def plot(results: Path, output: Path) -> None:
    """Mean over folds of test P@20 and nDCG@20 against training pairs, one column per ranker and document
    length; colour = layers kept, solid = full fine-tuning, dashed = LoRA; dotted grey = BM25, dash-dotted
    in the layers' colour = the untrained backbone (zero-shot)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from statistics import fmean

    rows = [json.loads(line) for line in results.open()]
    trained = [r for r in rows if r["key"]["kind"] == "trained" and "lr_scale" not in r["key"]]
    refs = [r for r in rows if r["key"]["kind"] == "reference"]
    panels = sorted({(r["key"]["ranker"], r["key"]["doc_len"]) for r in trained})
    colours = {layers: plt.cm.tab10(i) for i, layers in enumerate(sorted({r["key"]["layers"] for r in rows}))}
    metrics = ("P@20", "nDCG@20")
    figure, axes = plt.subplots(len(metrics), len(panels), figsize=(3.6 * len(panels), 3.2 * len(metrics)),
                                sharex=True, squeeze=False)
    for row, metric in enumerate(metrics):
        for axis, (ranker, doc_len) in zip(axes[row], panels):
            mine = [r for r in trained if (r["key"]["ranker"], r["key"]["doc_len"]) == (ranker, doc_len)]
            for layers, method in sorted({(r["key"]["layers"], r["key"]["method"]) for r in mine}):
                runs = [r["result"] for r in mine if (r["key"]["layers"], r["key"]["method"]) == (layers, method)]
                pairs = sorted({p["pairs"] for run in runs for p in run})
                means = [fmean(p[metric] for run in runs for p in run if p["pairs"] == n) for n in pairs]
                axis.plot([max(n, 8) for n in pairs], means, marker="o", markersize=3, color=colours[layers],
                          linestyle="-" if method == "full" else "--",
                          label=f"{layers} layer{'s' * (layers > 1)}, {method} ({len(runs)} folds)")
            here = [r for r in refs if r["key"]["doc_len"] == doc_len]
            if here:
                by_fold = {r["key"]["fold"]: r["result"]["bm25"][metric] for r in here}   # BM25 has no layers
                axis.axhline(fmean(by_fold.values()), linestyle=":", color="grey", label="BM25")
            for layers in sorted({r["key"]["layers"] for r in here}):
                values = [r["result"]["zero_shot"][metric] for r in here if r["key"]["layers"] == layers]
                axis.axhline(fmean(values), linestyle="-.", linewidth=0.8, color=colours[layers],
                             label=f"untrained backbone, {layers} layer{'s' * (layers > 1)}")
            axis.set_xscale("log", base=2)
            axis.set_title(f"{ranker}, documents ≤ {doc_len} word pieces", fontsize=9)
            axis.set_ylabel(f"test {metric}, mean of folds", fontsize=8)
            if row == len(metrics) - 1:
                axis.set_xlabel("training pairs seen (0 drawn at 8)", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for axis in axes.flat:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    figure.legend(handles, labels, fontsize=7, loc="center right")
    figure.tight_layout(rect=(0, 0, 0.83, 1))
    figure.savefig(output, dpi=110)


if __name__ == "__main__":
    main()
