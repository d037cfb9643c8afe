# Validation of the configuration and helpers shared by all rules.
import atexit
import os
import subprocess
import sys
import tempfile

from peftir.folds import fold_ids
from peftir.catalogue import BASELINE, BEST_OF, CATALOGUE, first_stage, settings_for
from peftir.config import ConfigError, validate
from peftir.runner import WORKER_ENV

try:
    validate(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as problem:
    raise WorkflowError(f"Invalid configuration: {problem}")


EXPERIMENT = config["experiment"]
DATASETS = EXPERIMENT["datasets"]
RANKERS = EXPERIMENT["rankers"]
SEEDS = EXPERIMENT["seeds"]


def kept(rankers):
    """The rankers of a table or figure that this experiment runs."""
    return [r for r in rankers if r in RANKERS]


TABLES = [name for name, spec in config["tables"].items() if kept(spec["rankers"])]
FIGURES = [name for name, spec in config["figures"].items() if kept(spec["rankers"])]


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


def resources_of(rule_name):
    """threads/mem_mb/runtime of a rule from config.resources."""
    return config["resources"][rule_name]


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
