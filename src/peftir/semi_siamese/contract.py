"""The Semi-Siamese system's contract with the workflow: its artefacts (trained runs, reranked runs, metrics,
Tables 3-7 and Figure 4), its rankers and fine-tuning methods (``RANKERS``, ``METHODS``: how a method's settings are
assembled from the config, ``resolve_method``), and what each of its jobs gets from the config (``PARAMS``).

Standard library only (and the core contract): the Snakefile plans from it without importing torch."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..contract.cells import IMPROVEMENT, cell_id
from ..contract.params import Config, ParamFunction, Wildcards
from ..contract.paths import CorePaths
from ..contract.wildcards import WILDCARDS as CORE_WILDCARDS, Artefacts

PAPER = "semi-siamese"       # its reported file's name (config/reported/); its tables have no folder of their own
RUN = "{dataset}/{ranker}/{method}/fold{fold}-seed{seed}"       # one trained run: its files share this key
FIRST_STAGE = "{dataset}/{ranker}/{method}/epochs{epochs}/fold{fold}-seed{seed}"


@dataclass(frozen=True)
class SemiSiamesePaths:
    """Path patterns of the Semi-Siamese system's artefacts."""

    backbone_run: str = "results/runs/{dataset}/backbone.run"          # BM25's candidates, untrained backbone
    backbone_run_metadata: str = "results/runs/{dataset}/backbone.ir_metadata.yaml"
    reference_metrics: str = "results/metrics/{dataset}/{reference}/fold{fold}.json"
    weights: str = f"results/models/{RUN}.pt"
    summary: str = f"results/models/{RUN}.json"
    first_stage_weights: str = f"results/models/{FIRST_STAGE}.pt"    # a hybrid's first part trained for m epochs
    first_stage_summary: str = f"results/models/{FIRST_STAGE}.json"
    run: str = f"results/runs/{RUN}.run"
    run_metadata: str = f"results/runs/{RUN}.ir_metadata.yaml"
    metrics: str = f"results/metrics/{RUN}.json"
    table_tex: str = "results/tables/{table}.tex"
    table_json: str = "results/tables/{table}.json"
    table_csv: str = "results/tables/{table}.csv"
    figure_pdf: str = "results/figures/{figure}.pdf"
    figure_png: str = "results/figures/{figure}.png"
    figure_json: str = "results/figures/{figure}.json"


PATHS = SemiSiamesePaths()


@dataclass(frozen=True)
class Ranker:
    bi_encoder: bool        # queries and documents encoded separately (semi-Siamese methods apply)


RANKERS: Mapping[str, Ranker] = MappingProxyType({
    "monobert": Ranker(bi_encoder=False),
    "twinbert": Ranker(bi_encoder=True),
    "colbert": Ranker(bi_encoder=True),
})


@dataclass(frozen=True)
class Method:
    """A named fine-tuning method: one builder (a module of ``peftir.semi_siamese.methods``) with the config
    entries it reads and a fixed variant, or a composite of named methods trained together or one
    after the other (sequential: the first part is trained, kept and frozen before the second)."""

    builder: str | None = None              # peftir.semi_siamese.methods.<builder>.build
    entries: tuple[str, ...] = ()           # config `methods` entries merged into its settings
    variant: str | None = None              # fixed variant (semi-Siamese Tables 6 and 7)
    parts: tuple[str, ...] = ()             # composite: the named methods it combines, in order
    sequential: bool = False
    bi_encoder_only: bool = False           # semi-Siamese: query and document paths differ


def _sequential(first: str, second: str) -> Method:
    return Method(parts=(first, second), sequential=True,
                  bi_encoder_only=first.startswith("ss_") or second.startswith("ss_"))


METHODS: Mapping[str, Method] = MappingProxyType({
    "full": Method("full", ("full",)),
    "prompt": Method("prompt", ("prompt",)),
    "prefix": Method("prefix", ("prefix",)),
    "lora": Method("lora", ("lora",)),
    "lora_pp": Method("lora", ("lora_pp",)),            # LoRA++: LoRA whose targets add attention.output.dense
    "prefix_lora": Method(parts=("prefix", "lora")),    # concurrent hybrid (Figure 4)
    "prefix_then_lora": _sequential("prefix", "lora"),
    "lora_then_prefix": _sequential("lora", "prefix"),
    "ss_prefix": Method("ss_prefix", ("prefix", "ss_prefix"), "average", bi_encoder_only=True),
    "ss_prefix_concat": Method("ss_prefix", ("prefix", "ss_prefix"), "concat", bi_encoder_only=True),
    "ss_prefix_none": Method("ss_prefix", ("prefix", "ss_prefix"), "none", bi_encoder_only=True),
    "ss_lora": Method("ss_lora", ("lora",), "hetero_value", bi_encoder_only=True),
    "ss_lora_hetero_query": Method("ss_lora", ("lora",), "hetero_query", bi_encoder_only=True),
    "ss_lora_none": Method("ss_lora", ("lora",), "none", bi_encoder_only=True),
    "prefix_then_ss_lora": _sequential("prefix", "ss_lora"),
    "ss_lora_then_prefix": _sequential("ss_lora", "prefix"),
})
BASELINE = "full"          # every table's t-tests compare against full fine-tuning
BEST_OF = "lft_best"       # Table 5's "LFT (best)" row: per column, the best method of another table
# Reference rows (experiment.references), untrained systems evaluated per fold, never tested: the first
# stage the rankers rerank, and the backbone they start from used as it comes (``rankers.zero_shot``).
REFERENCES: Mapping[str, str] = MappingProxyType({"bm25": "bm25_run", "backbone": "backbone_run"})   # → its run


def method(name: str) -> Method:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; allowed: {', '.join(METHODS)}")
    return METHODS[name]


def resolve_method(name: str, configured: Mapping[str, dict]) -> dict:
    """What a run of method ``name`` is built from: its simple parts in order, each with the builder
    that attaches it and its settings (its config entries merged, plus a fixed variant).

    The only place the catalogue is read for building: jobs get this dict as their ``method``
    param, so changing one config entry reruns exactly the methods built from it.
    """
    entry = method(name)
    parts = [part for part_name in (entry.parts or (name,)) for part in _parts(part_name, configured)]
    return {"name": name, "parts": parts, "sequential": entry.sequential, "bi_encoder_only": entry.bi_encoder_only}


def _parts(name: str, configured: Mapping[str, dict]) -> list[dict]:
    entry = method(name)
    if entry.parts:
        return [part for part_name in entry.parts for part in _parts(part_name, configured)]
    settings = {key: value for config_entry in entry.entries for key, value in configured[config_entry].items()}
    if entry.variant is not None:
        settings["variant"] = entry.variant
    return [{"method": name, "builder": entry.builder, "settings": settings}]


def first_stage(name: str) -> str | None:
    """The method whose kept weights a sequential hybrid starts from (frozen), else None."""
    entry = method(name)
    return entry.parts[0] if entry.sequential else None


def dataset_training(config: Config, dataset: str) -> dict:
    """config.training with the dataset's own overrides (e.g. MS MARCO's 10 epochs, its m and n)."""
    overrides = config["datasets"][dataset].get("training", {})
    return {**config["training"], **overrides,
            "sequential": {**config["training"]["sequential"], **overrides.get("sequential", {})}}


def training_settings(config: Config, wildcards: Wildcards) -> dict:
    """A job's training settings: a sequential hybrid trains its second part for n epochs, a hybrid's
    first part on its own for the m epochs its path names, anything else for the dataset's epochs."""
    settings = dataset_training(config, wildcards["dataset"])
    if "epochs" in wildcards:
        return {**settings, "epochs": int(wildcards["epochs"])}
    if first_stage(wildcards["method"]):
        return {**settings, "epochs": settings["sequential"]["second_epochs"]}
    return settings


def ranker_settings(config: Config, wildcards: Wildcards) -> dict:
    """Length limits and the ranker's own options: changing ColBERT's dim does not rerun TwinBERT."""
    ranker = wildcards["ranker"]
    settings = config["ranker"]
    return {"max_query_len": settings["max_query_len"], "max_doc_len": settings["max_doc_len"],
            "max_seq_len": settings["max_seq_len"], ranker: settings[ranker]}


def table_rankers(config: Config, rankers: list[str]) -> list[str]:
    """The rankers of a table or figure that this experiment runs."""
    return [r for r in rankers if r in config["experiment"]["rankers"]]


def row_methods(config: Config, spec: Mapping, row: str) -> list[str]:
    """The methods a row reads: itself, or for lft_best the best_of table's methods other than full FT."""
    if row != BEST_OF:
        return [row]
    return [m for m in config["tables"][spec["best_of"]]["methods"] if m not in (BASELINE, BEST_OF)]


def report_layout(config: Config, kind: str, name: str) -> dict:
    """What a table or figure job needs to lay itself out: columns, groups, rows and their labels."""
    spec = config[kind][name]
    labels = {**config["labels"]["methods"], **spec.get("labels", {})}
    return {
        "name": name,
        "caption": spec["caption"],
        "datasets": [[d, config["datasets"][d]["label"]] for d in config["experiment"]["datasets"]],
        "metrics": [spec["metric"]] if "metric" in spec else list(config["experiment"]["metrics"]),
        "baseline": BASELINE,
        "references": [[name, config["labels"]["references"][name]] for name in config["experiment"]["references"]],
        "groups": [
            {"label": config["labels"]["rankers"][ranker], "ranker": ranker,
             "rows": [{"method": m, "label": labels[m],
                       "candidates": row_methods(config, spec, m) if m == BEST_OF else []}
                      for m in spec["methods"]]}
            for ranker in table_rankers(config, spec["rankers"])
        ],
    }


def layout_cell_ids(layout: Mapping[str, Any]) -> list[str]:
    """Every cell id of a table with this layout (``report_layout``), in print order, as
    ``peftir.reports.cells.table_cells`` names them: the reference rows, then per ranker its rows and "Improvement"."""
    columns = [(dataset, metric) for dataset, _ in layout["datasets"] for metric in layout["metrics"]]
    ids = [cell_id("", system, d, m) for system, _ in layout["references"] for d, m in columns]
    for group in layout["groups"]:
        rows = [row["method"] for row in group["rows"]] + [IMPROVEMENT]
        ids += [cell_id(group["ranker"], row, d, m) for row in rows for d, m in columns]
    return ids


def _validation(config: Config, wildcards: Wildcards) -> dict:
    """The validation metric and, for a large validation split, the fixed sample scored every epoch."""
    spec = config["datasets"][wildcards["dataset"]]
    return {"metric": spec["validation_metric"], "sample": spec.get("validation_sample")}


WILDCARDS = {"ranker": "|".join(RANKERS), "reference": "|".join(REFERENCES),
             "method": "|".join(sorted(METHODS, key=len, reverse=True)), "epochs": r"\d+"}
# the artefacts this system's jobs read and write, matched back from their paths
ARTEFACTS = Artefacts([CorePaths(), PATHS], {**CORE_WILDCARDS, **WILDCARDS})

PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "backbone": lambda config, wc: config["backbone"],
    "ranker": ranker_settings,
    "lengths": lambda config, wc: {key: config["ranker"][key] for key in ("max_query_len", "max_doc_len",
                                                                          "max_seq_len")},
    "method": lambda config, wc: resolve_method(wc["method"], config["methods"]),
    "training": training_settings,
    "rerank": lambda config, wc: config["rerank"],
    "validation": _validation,
    "metrics": lambda config, wc: list(config["experiment"]["metrics"]),
    "depth": lambda config, wc: config["rerank"]["depth"],
    "table": lambda config, wc: report_layout(config, "tables", wc["table"]),
    "figure": lambda config, wc: report_layout(config, "figures", wc["figure"]),
})
