# Validation of the configuration and helpers shared by all rules.
import atexit
import json
import os
import subprocess
import sys
import tempfile

import yaml

from peftir.folds import fold_ids
from peftir.catalogue import BASELINE, BEST_OF, CATALOGUE, first_stage, settings_for
from peftir.code import modules_used
from peftir.config import ConfigError, validate
from peftir.provenance import CONFIGFILES_ENV, git_state, record_path, versions
from peftir.runner import WORKER_ENV

try:
    validate(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as problem:
    raise WorkflowError(f"Invalid configuration: {problem}")


def report_context():
    """What `snakemake --report` shows on its landing page (workflow/report/workflow.rst): the
    checkout's commit, the commit each built table came from (its provenance record), package
    versions and the config. Placed in the config for the report's template, after validation."""
    built = {}
    for table in TABLES:
        record = record_path(f"results/tables/{table}.tex")
        if record.exists():
            with open(record) as handle:
                recorded = json.load(handle)
            built[table] = {"commit": recorded["git"]["commit"], "dirty": recorded["git"]["dirty"],
                            "ended": recorded["ended"]}
    return {**git_state(workflow.basedir), "tables": built, "versions": versions(),
            "configfiles": [os.path.abspath(p) for p in workflow.config_settings.configfiles] or ["config.yaml"],
            "config": yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True)}


# Jobs record the run's config files in their provenance, so `peftir audit` can check params against them.
os.environ[CONFIGFILES_ENV] = os.pathsep.join(
    os.path.abspath(path) for path in workflow.config_settings.configfiles
)

EXPERIMENT = config["experiment"]
DATASETS = EXPERIMENT["datasets"]
RANKERS = EXPERIMENT["rankers"]
SEEDS = EXPERIMENT["seeds"]


def kept(rankers):
    """The rankers of a table or figure that this experiment runs."""
    return [r for r in rankers if r in RANKERS]


TABLES = [name for name, spec in config["tables"].items() if kept(spec["rankers"])]
FIGURES = [name for name, spec in config["figures"].items() if kept(spec["rankers"])]

if workflow.is_main_process:
    config["_report"] = report_context()


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    ranker="|".join(RANKERS),
    method="|".join(CATALOGUE),
    fold=r"\d+",
    seed=r"\d+",


def folds_of(dataset):
    """Fold ids of a dataset, known from the config alone (DAG planning needs no data)."""
    return fold_ids(config["datasets"][dataset])


# What the export and the folds depend on: a label or training override must not re-export a collection.
EXPORT_KEYS = ("irds", "query_field", "doc_fields", "splits", "licence")
FOLD_KEYS = ("folds", "splits")


def dataset_subset(dataset, keys):
    spec = config["datasets"][dataset]
    return {key: spec[key] for key in keys if key in spec}


def run_key(ranker, method, fold, seed):
    return f"{ranker}/{method}/fold{fold}-seed{seed}"


def code(job_module):
    """The package files a rule's job runs (its job module's import closure), as inputs: editing one
    reruns exactly the rules that use it (Snakemake tracks only the script itself)."""
    return list(modules_used(job_module))


def rule_resources(rule_name, wildcards):
    """config.resources of a rule with the dataset's overrides (datasets.<name>.resources)."""
    dataset = getattr(wildcards, "dataset", None)
    overrides = config["datasets"][dataset].get("resources", {}).get(rule_name, {}) if dataset else {}
    return {"gpu": 0, **config["resources"][rule_name], **overrides}


def threads_of(rule_name):
    return lambda wildcards: rule_resources(rule_name, wildcards)["threads"]


# Site-specific SLURM settings: never in the workflow, but in environment variables or in one local,
# git-ignored file (slurm/site.yaml, or the file $PEFTIR_SLURM_SITE names); see slurm/site.example.yaml.
SITE_VARIABLES = {
    "account": "PEFTIR_SLURM_ACCOUNT",
    "partition": "PEFTIR_SLURM_PARTITION",
    "gpu_partition": "PEFTIR_SLURM_GPU_PARTITION",
    "gpu_model": "PEFTIR_SLURM_GPU_MODEL",
    "qos": "PEFTIR_SLURM_QOS",
}


def site_settings():
    path = os.environ.get("PEFTIR_SLURM_SITE", os.path.join(workflow.basedir, "slurm", "site.yaml"))
    settings = {}
    if os.path.exists(path):
        with open(path) as handle:
            settings = yaml.safe_load(handle) or {}
        unknown = sorted(set(settings) - set(SITE_VARIABLES))
        if unknown:
            raise WorkflowError(f"{path}: unknown keys {unknown}; allowed: {sorted(SITE_VARIABLES)}")
    for key, variable in SITE_VARIABLES.items():
        if os.environ.get(variable):
            settings[key] = os.environ[variable]
    return settings


SITE = site_settings()


def resources_of(rule_name):
    """A rule's resources: memory, runtime and GPUs from the config (per dataset), SLURM site values
    (partition, account, QoS, GPU model) from the site settings. Only executors that know a key use it."""

    def value(key):
        return lambda wildcards: rule_resources(rule_name, wildcards)[key]

    uses_gpu = config["resources"][rule_name].get("gpu", 0) > 0
    site = {
        "slurm_partition": SITE.get("gpu_partition" if uses_gpu else "partition"),
        "slurm_account": SITE.get("account"),
        "qos": SITE.get("qos"),
        "gpu_model": SITE.get("gpu_model") if uses_gpu else None,
    }
    return {"mem_mb": value("mem_mb"), "runtime": value("runtime"), "gpu": value("gpu"),
            **{key: setting for key, setting in site.items() if setting}}


def dataset_training(dataset):
    """config.training with the dataset's own overrides (e.g. MS MARCO's 10 epochs, m and n)."""
    overrides = config["datasets"][dataset].get("training", {})
    return {**config["training"], **overrides}


def training_settings(wildcards):
    """A job's training settings; a sequential hybrid's job trains its second part for n epochs."""
    settings = dataset_training(wildcards.dataset)
    if first_stage(wildcards.method):
        return {**settings, "epochs": settings["sequential"]["second_epochs"]}
    return settings


def first_stage_training(wildcards):
    """A sequential hybrid's first part trained on its own for m epochs (when m differs from epochs)."""
    settings = dataset_training(wildcards.dataset)
    return {**settings, "epochs": settings["sequential"]["first_epochs"]}


def dataset_settings(wildcards):
    spec = config["datasets"][wildcards.dataset]
    return {"validation_metric": spec["validation_metric"]}


def method_params(method):
    return {"name": method, "settings": settings_for(method, config["methods"])}


def method_settings(wildcards):
    return method_params(wildcards.method)


def first_stage_method(wildcards):
    return method_params(first_stage(wildcards.method))


def first_stage_input(wildcards):
    """A sequential hybrid starts from its first part's kept weights: the standalone run's when m equals
    the standalone epochs (the paper's setting), else a first-stage run of m epochs."""
    first = first_stage(wildcards.method)
    if first is None:
        return {}
    settings = dataset_training(wildcards.dataset)
    base = f"results/models/{wildcards.dataset}/{wildcards.ranker}"
    run = f"fold{wildcards.fold}-seed{wildcards.seed}.pt"
    if settings["sequential"]["first_epochs"] == settings["epochs"]:
        return {"first_stage": f"{base}/{first}/{run}"}
    return {"first_stage": f"{base}/{wildcards.method}/stage1/{run}"}


def dataset_files(wildcards):
    base = f"results/data/{wildcards.dataset}"
    return {
        "queries": f"{base}/queries.tsv",
        "qrels": f"{base}/qrels.txt",
        "docs": f"{base}/corpus/docs.jsonl",
        "folds": f"{base}/folds.json",
    }


def row_methods(spec, method):
    """The methods a row reads: itself, or for lft_best the best_of table's methods other than full FT."""
    if method != BEST_OF:
        return [method]
    return [m for m in config["tables"][spec["best_of"]]["methods"] if m not in (BASELINE, BEST_OF)]


def layout_runs(kind, name, what):
    """Metrics or training summaries of every run a table or figure summarises, in one fixed order."""
    pattern = {
        "metrics": "results/metrics/{dataset}/{key}.json",
        "summaries": "results/models/{dataset}/{key}.json",
    }[what]
    spec = config[kind][name]
    methods = list(dict.fromkeys(m for row in spec["methods"] for m in row_methods(spec, row)))
    return [
        pattern.format(dataset=dataset, key=run_key(ranker, method, fold, seed))
        for dataset in DATASETS
        for ranker in kept(spec["rankers"])
        for method in methods
        for fold in folds_of(dataset)
        for seed in SEEDS
    ]


def bm25_metrics(wildcards):
    return [f"results/metrics/{d}/bm25/fold{f}.json" for d in DATASETS for f in folds_of(d)]


def layout_spec(kind, name):
    """What a table or figure job needs to lay itself out: columns, groups, rows and their labels."""
    spec = config[kind][name]
    labels = {**config["labels"]["methods"], **spec.get("labels", {})}
    return {
        "name": name,
        "caption": spec["caption"],
        "datasets": [[d, config["datasets"][d]["label"]] for d in DATASETS],
        "metrics": [spec["metric"]] if "metric" in spec else EXPERIMENT["metrics"],
        "groups": [
            {
                "label": config["labels"]["rankers"][ranker],
                "ranker": ranker,
                "rows": [
                    {"method": m, "label": labels[m], "candidates": row_methods(spec, m) if m == BEST_OF else []}
                    for m in spec["methods"]
                ],
            }
            for ranker in kept(spec["rankers"])
        ],
    }


# The warm worker (peftir.worker) serves local runs only: on a cluster each job
# runs in its own process on its own node.
def start_warm_worker():
    if not (config["execution"]["warm_worker"] and workflow.local_exec and not workflow.remote_exec):
        return
    if workflow.deployment_settings.deployment_method:  # jobs must run in their conda env / container
        return
    address = os.path.join(tempfile.mkdtemp(prefix="peftir-"), "worker.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", "peftir.worker", address, str(os.getpid())],
        stdin=subprocess.DEVNULL,
    )
    atexit.register(process.kill)
    os.environ[WORKER_ENV] = address


onstart:
    start_warm_worker()
