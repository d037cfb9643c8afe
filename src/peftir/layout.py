"""The contract between the Snakemake workflow and the package: names, paths and what each job gets.

One module says, for rules, scripts, tables and the audit alike:

- where every artefact lives (``PATHS``) and what its wildcards may be (``WILDCARDS``);
- which metric names exist (``measure``: ir_measures' names, e.g. ``P@20``, ``nDCG@20``, ``RR@10``, ``AP``);
- which rankers and fine-tuning methods exist (``RANKERS``, ``METHODS``) and how a method's
  settings are assembled from the config (``resolve_method``);
- what each job receives from the config (``PARAMS``, one function per concern; a rule names the
  concerns it needs, and the audit recomputes a record's params with the same functions).

Adding a method, a ranker or a dataset means adding entries here and to the config; a new system
adds its artefacts, its rules and its params concerns. Standard library and ir_measures only: the
Snakefile plans from this module without importing torch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import ir_measures

RESULTS = "results"

# --- artefacts ---------------------------------------------------------------------------------
RUN = "{dataset}/{ranker}/{method}/fold{fold}-seed{seed}"       # one trained run: its files share this key
FIRST_STAGE = "{dataset}/{ranker}/{method}/epochs{epochs}/fold{fold}-seed{seed}"


@dataclass(frozen=True)
class Paths:
    """Path patterns of the workflow's artefacts (Snakemake wildcards in braces)."""

    docs: str = "results/data/{dataset}/corpus/docs.jsonl"
    docs_lookup: str = "results/data/{dataset}/docs.lookup.sqlite"    # id → line of docs.jsonl (outside corpus/:
                                                                      # Anserini indexes every file there)
    queries: str = "results/data/{dataset}/queries.tsv"
    qrels: str = "results/data/{dataset}/qrels.txt"
    export_info: str = "results/data/{dataset}/info.json"
    folds: str = "results/data/{dataset}/folds.json"
    triples: str = "results/data/{dataset}/triples.tsv"       # fixed training triples (MS MARCO), if any
    index: str = "results/index/{dataset}"
    bm25_run: str = "results/runs/{dataset}/bm25.run"
    bm25_run_metadata: str = "results/runs/{dataset}/bm25.ir_metadata.yaml"
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
    crate: str = "results/crates/{report}.crate.zip"     # a table's or figure's Workflow Run RO-Crate

    @staticmethod
    def log(rule: str, key: str) -> str:
        """A rule's log: ``results/logs/<rule>/<key>.log`` (key: the output's wildcards, e.g. ``RUN``)."""
        return f"{RESULTS}/logs/{rule}/{key}.log"


PATHS = Paths()

# --- rankers and methods -----------------------------------------------------------------------


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
    """A named fine-tuning method: one builder (a module of ``peftir.methods``) with the config
    entries it reads and a fixed variant, or a composite of named methods trained together or one
    after the other (sequential: the first part is trained, kept and frozen before the second)."""

    builder: str | None = None              # peftir.methods.<builder>.build
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


# --- metrics -----------------------------------------------------------------------------------
# ir_measures' own names; computed by the first of these providers that supports the measure, so a
# number never depends on which optional providers a machine happens to have.
MEASURE_PROVIDERS = ("pytrec_eval", "msmarco")
MEASURE_EXAMPLES = "P@20, nDCG@20, RR@10, AP, R@1000"


def measure(name: str) -> ir_measures.Measure:
    """The ir_measures measure of a metric name; ValueError naming the problem and the allowed forms."""
    try:
        parsed = ir_measures.parse_measure(name)
    except (NameError, ValueError, SyntaxError, TypeError, AttributeError):
        raise ValueError(f"{name!r} is not an ir_measures measure (e.g. {MEASURE_EXAMPLES})") from None
    if str(parsed) != name:
        raise ValueError(f"ir_measures calls {name!r} {str(parsed)!r}: use its name")
    cutoff = parsed.params.get("cutoff")
    if cutoff is not None and (not isinstance(cutoff, int) or cutoff < 1):
        raise ValueError(f"{name!r}: the cutoff must be a positive integer")
    if measure_provider(parsed) is None:
        raise ValueError(f"{name!r}: none of the providers {', '.join(MEASURE_PROVIDERS)} computes it "
                         f"(e.g. {MEASURE_EXAMPLES})")
    return parsed


def measure_provider(parsed: ir_measures.Measure):
    """The provider that computes ``parsed`` (the first of MEASURE_PROVIDERS that supports it), or None."""
    for name in MEASURE_PROVIDERS:
        provider = ir_measures.providers.registry[name]
        if provider.is_available() and provider.supports(parsed):
            return provider
    return None


# --- wildcards ---------------------------------------------------------------------------------
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"      # dataset, table and figure keys: never a path separator or ".."


def wildcard_constraints() -> dict[str, str]:
    """The regular expression every wildcard must match (Snakemake's ``wildcard_constraints``)."""
    return {"dataset": NAME, "table": NAME, "figure": NAME, "report": NAME, "ranker": "|".join(RANKERS),
            "reference": "|".join(REFERENCES),
            "method": "|".join(sorted(METHODS, key=len, reverse=True)), "fold": r"\d+", "seed": r"\d+",
            "epochs": r"\d+"}


def artefact(path: str) -> tuple[str, dict[str, str]] | None:
    """Which artefact ``path`` is (its ``PATHS`` field) and its wildcards, or None."""
    for kind, pattern in _PATTERNS.items():
        found = pattern.fullmatch(path)
        if found:
            return kind, found.groupdict()
    return None


def _compile(pattern: str) -> re.Pattern:
    constraints = wildcard_constraints()
    parts = re.split(r"\{(\w+)\}", pattern)
    regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>{constraints[part]})"
                    for i, part in enumerate(parts))
    return re.compile(regex)


_PATTERNS = {kind: _compile(getattr(PATHS, kind)) for kind in Paths.__dataclass_fields__}

# --- what each job gets from the config --------------------------------------------------------
Config = Mapping[str, Any]
Wildcards = Mapping[str, str]
EXPORT_KEYS = ("irds", "query_field", "doc_fields", "splits", "topics", "licence")   # a label change must not re-export
FOLD_KEYS = ("folds", "splits")


def _dataset_subset(config: Config, dataset: str, keys: tuple[str, ...]) -> dict:
    spec = config["datasets"][dataset]
    return {key: spec[key] for key in keys if key in spec}


def dataset_training(config: Config, dataset: str) -> dict:
    """config.training with the dataset's own overrides (e.g. MS MARCO's 10 epochs, its m and n)."""
    overrides = config["datasets"][dataset].get("training", {})
    return {**config["training"], **overrides,
            "sequential": {**config["training"]["sequential"], **overrides.get("sequential", {})}}


def _training(config: Config, wildcards: Wildcards) -> dict:
    """A job's training settings: a sequential hybrid trains its second part for n epochs, a hybrid's
    first part on its own for the m epochs its path names, anything else for the dataset's epochs."""
    settings = dataset_training(config, wildcards["dataset"])
    if "epochs" in wildcards:
        return {**settings, "epochs": int(wildcards["epochs"])}
    if first_stage(wildcards["method"]):
        return {**settings, "epochs": settings["sequential"]["second_epochs"]}
    return settings


def _ranker(config: Config, wildcards: Wildcards) -> dict:
    """Length limits and the ranker's own options: changing ColBERT's dim does not rerun TwinBERT."""
    ranker = wildcards["ranker"]
    settings = config["ranker"]
    return {"max_query_len": settings["max_query_len"], "max_doc_len": settings["max_doc_len"],
            "max_seq_len": settings["max_seq_len"], ranker: settings[ranker]}


def kept(config: Config, rankers: list[str]) -> list[str]:
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
            for ranker in kept(config, spec["rankers"])
        ],
    }


def train_pairs(config: Config, dataset: str) -> dict:
    """Where a dataset's training triples come from: sampled from the BM25 candidates of the training
    queries (``bm25``, the default), or a fixed file made from its training split (``docpairs``,
    ``doctriples``: ``peftir.data.triples``), which then needs no BM25 run of the training queries."""
    spec = config["datasets"][dataset]
    pairs = spec.get("train_pairs", {"source": "bm25"})
    return pairs if pairs["source"] == "bm25" else {**pairs, "irds": spec["splits"]["train"]}


def _bm25(config: Config, wildcards: Wildcards) -> dict:
    """BM25's settings and the pre-assigned splits it ranks (None: every query, as cross-validation needs)."""
    fixed = train_pairs(config, wildcards["dataset"])["source"] != "bm25"
    return {**config["bm25"], "splits": ["valid", "test"] if fixed else None}


def _validation(config: Config, wildcards: Wildcards) -> dict:
    """The validation metric and, for a large validation split, the fixed sample scored every epoch."""
    spec = config["datasets"][wildcards["dataset"]]
    return {"metric": spec["validation_metric"], "sample": spec.get("validation_sample")}


ParamFunction = Callable[[Config, Wildcards], Any]
PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "export": lambda config, wc: _dataset_subset(config, wc["dataset"], EXPORT_KEYS),
    "folds": lambda config, wc: _dataset_subset(config, wc["dataset"], FOLD_KEYS),
    "train_pairs": lambda config, wc: train_pairs(config, wc["dataset"]),
    "bm25": _bm25,
    "backbone": lambda config, wc: config["backbone"],
    "ranker": _ranker,
    "lengths": lambda config, wc: {key: config["ranker"][key] for key in ("max_query_len", "max_doc_len",
                                                                          "max_seq_len")},
    "method": lambda config, wc: resolve_method(wc["method"], config["methods"]),
    "training": _training,
    "rerank": lambda config, wc: config["rerank"],
    "validation": _validation,
    "execution": lambda config, wc: {key: config["execution"][key] for key in ("device", "precision")},
    "metrics": lambda config, wc: list(config["experiment"]["metrics"]),
    "depth": lambda config, wc: config["rerank"]["depth"],
    "table": lambda config, wc: report_layout(config, "tables", wc["table"]),
    "figure": lambda config, wc: report_layout(config, "figures", wc["figure"]),
    "publication": lambda config, wc: config["publication"],
})
