"""The relations between configuration keys that jobs rely on, as data, checked before any job runs.

The schema checks every key alone. A value valid alone can still be wrong against another: a depth beyond the ranking
it draws from, a warm-up longer than its run, a layer the backbone does not have, more folds than queries. Each such
pair is one ``Relation`` of ``RELATIONS`` below (``value`` + ``slack`` at most ``bound``), so the list is complete in
one place, ``docs/configuration/relations.md`` is written from it (``markdown``; a test keeps the two equal), and a new
section adds its relations here. What a key *names* (a dataset, a run, a method of another section) is checked by
``peftir.workflow.config`` and its section checkers; the same page lists those.

A key is written as the user writes it, from the top of the config. A section's overrides (a dataset's ``training``,
a dense or SPLADE method's own ``steps``, a pretraining run's ``settings``) are scopes: in each, a key the override sets
is read, and named, there. A bound the config does not write but that is known before any job (a backbone's depth or
positions, a dataset's queries from ir_datasets' metadata, a metric's cutoff) is a ``Derived`` side; where it cannot be
known here (a hub model not in the local cache), the relation is left to the job.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable, Iterator

from ..data.sizes import collection_size
from ..layout import DENSE_OVERRIDES, MLM_HEAD_RUN, SPLADE_OVERRIDES, measure, pretrained_run
from ..rankers import pretrained


class RelationError(ValueError):
    """A broken relation: one line naming both keys and their values (``ConfigError`` re-raises it)."""


@dataclass(frozen=True)
class Layer:
    """Keys under ``mount`` read from ``values``, written (and named) as ``key``."""
    mount: str
    key: str
    values: dict


class Scope:
    """The config as one job sees it: the top-level config under the override layers that apply."""

    def __init__(self, config: dict, layers: tuple[Layer, ...] = ()) -> None:
        self.config, self.layers = config, (*layers, Layer("", "", config))

    def get(self, path: str) -> tuple[str, Any] | None:
        """``(the key as written, its value)`` of a dotted path (``a.b[0]``), or None where the config has none."""
        for layer in self.layers:
            if layer.mount and not path.startswith(layer.mount + "."):
                continue
            rest = path[len(layer.mount) + 1:] if layer.mount else path
            found = _walk(layer.values, rest)
            if found is not None:
                return (f"{layer.key}.{rest}" if layer.key else rest), found
        return None


def _walk(values: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            index = int(part[1:-1])
            values = values[index] if isinstance(values, list) and index < len(values) else None
        else:
            values = values.get(part) if isinstance(values, dict) else None
        if values is None:
            return None
    return values


Found = list[tuple[str, int]]      # (what it is, as a message names it; its value)


@dataclass(frozen=True)
class Derived:
    """A side known before any job but not written in the config: ``of(scope)`` gives ``(what, value)`` pairs (a
    value side: each is checked; a bound: the smallest counts), none where it cannot be known here."""
    name: str
    of: Callable[[Scope], Found]


Side = str | Derived


@dataclass(frozen=True)
class Relation:
    """``value`` (+ ``slack``) is at most (``strict``: below) ``scale`` × ``bound``, because ``why``."""
    section: str
    value: Side
    bound: Side
    why: str
    slack: int = 0
    scale: int = 1
    strict: bool = False

    def statement(self) -> str:
        value = _name(self.value) + _signed(self.slack)
        bound = (f"{self.scale} × " if self.scale != 1 else "") + _name(self.bound)
        return f"{value} {'<' if self.strict else '≤'} {bound}"

    def check(self, scope: Scope) -> None:
        values, bounds = _resolve(self.value, scope), _resolve(self.bound, scope)
        if not values or not bounds:
            return
        limit_what, limit = min(bounds, key=lambda found: found[1])
        limit *= self.scale
        for what, value in values:
            if value + self.slack >= limit if self.strict else value + self.slack > limit:
                bound = f"{self.scale} × {limit_what}" if self.scale != 1 else limit_what
                raise RelationError(f"config key {what}: {'below' if self.strict else 'at most'} {bound}"
                                    f"{_signed(-self.slack)} ({self.why})")


def _signed(number: int) -> str:
    return f" {'+' if number > 0 else '-'} {abs(number)}" if number else ""


def _name(side: Side) -> str:
    return side if isinstance(side, str) else side.name


def _resolve(side: Side, scope: Scope) -> Found:
    if isinstance(side, Derived):
        return side.of(scope)
    found = scope.get(side)
    if found is None or found[1] is None:
        return []
    return [(f"{found[0]} = {found[1]!r}", found[1])]


# --- derived sides: what the backbones, the datasets and the metrics say ---------------------------------------------

def _model_config(config: dict, name: str) -> dict | None:
    """The Hugging Face config of a backbone, where it can be read here; a ``pretrained:<run>`` backbone's is that
    of the model its run starts from (its own backbone, its warm start's, or the pretraining section's)."""
    run = pretrained_run(name)
    if run is not None:
        pretraining = config.get("pretraining") or {}
        runs = pretraining.get("runs", {})
        spec = runs.get(run, {})
        if run != MLM_HEAD_RUN and not spec:
            return None
        if spec.get("warm_start"):
            spec = runs.get(spec["warm_start"], {})
        name = spec.get("backbone") or (pretraining.get("backbone") or {}).get("name")
        if not name or pretrained_run(name):
            return None
    found = pretrained.config_file(name)
    return _read_json(found) if found else None


@cache
def _read_json(path: Path) -> dict:
    """A config.json, read once per check (every scope asks for the same backbones)."""
    return json.loads(path.read_text())


def _positions(model: dict) -> int | None:
    """Positions a text may use: RoBERTa's first two are its padding's."""
    offset = 2 if model.get("model_type") in ("roberta", "xlm-roberta", "camembert") else 0
    return model["max_position_embeddings"] - offset if "max_position_embeddings" in model else None


def _layers(model: dict) -> int | None:
    """Transformer layers, as BERT's and DistilBERT's configs name them."""
    return model.get("num_hidden_layers", model.get("n_layers"))


def _models(keys: Callable[[Scope], list[str]], read: Callable[[dict], int | None],
            what: str) -> Callable[[Scope], Found]:
    def of(scope: Scope) -> Found:
        found = []
        for key in keys(scope):
            written = scope.get(key)
            model = _model_config(scope.config, written[1]) if written and written[1] else None
            size = read(model) if model is not None else None
            if size is not None:
                found.append((f"{size}, the {what} of {key} = {written[1]!r}", size))
        return found
    return of


def _each(prefix: str, field: str = "") -> Callable[[Scope], list[str]]:
    """The keys ``prefix.<name>[.field]`` of every entry of the dict at ``prefix``."""
    def keys(scope: Scope) -> list[str]:
        entries = scope.get(prefix)
        return [f"{prefix}.{name}" + (f".{field}" if field else "") for name in (entries[1] if entries else {})]
    return keys


def _one(key: str) -> Callable[[Scope], list[str]]:
    return lambda scope: [key]


def _queries(key: str) -> Callable[[Scope], Found]:
    """The queries of the ir_datasets ids at ``key`` (a dataset's own, its topics, a split), from their metadata."""
    def of(scope: Scope) -> Found:
        written = scope.get(key)
        ids = written[1] if written else None
        counts = [collection_size(irds)[1] for irds in ([ids] if isinstance(ids, str) else ids or [])]
        if not counts or 0 in counts:
            return []
        return [(f"{sum(counts)}, the queries of {written[0]} = {ids!r}", sum(counts))]
    return of


def _documents(key: str) -> Callable[[Scope], Found]:
    """The documents of the dataset named at ``key``, from its metadata."""
    def of(scope: Scope) -> Found:
        written = scope.get(key)
        spec = scope.config["datasets"].get(written[1]) if written else None
        count = collection_size(spec["irds"])[0] if spec else 0
        return [(f"{count}, the documents of {written[0]} = {written[1]!r}", count)] if count else []
    return of


def _cutoffs(key: str) -> Callable[[Scope], Found]:
    """The cutoff of the metric, or of each metric of the list, at ``key`` that has one (R@1000: 1000)."""
    def of(scope: Scope) -> Found:
        written = scope.get(key)
        if not written:
            return []
        names = {written[0]: written[1]} if isinstance(written[1], str) else {
            f"{written[0]}[{index}]": name for index, name in enumerate(written[1])}
        cutoffs = {where: (name, measure(name).params.get("cutoff")) for where, name in names.items()}
        return [(f"{where} = {name!r} (cutoff {cutoff})", cutoff) for where, (name, cutoff) in cutoffs.items()
                if cutoff is not None]
    return of


def _summed(*keys: str) -> Callable[[Scope], Found]:
    """``keys``' values added, named each (a prompt and the text after it in one sequence)."""
    def of(scope: Scope) -> Found:
        found = [scope.get(key) for key in keys]
        if any(item is None or item[1] is None for item in found):
            return []
        total = sum(item[1] for item in found)
        return [(" + ".join(f"{key} = {value!r}" for key, value in found) + f" = {total}", total)]
    return of


def _longest(*keys: str) -> Callable[[Scope], Found]:
    """The largest of ``keys``' values (the longer of a query and a passage)."""
    def of(scope: Scope) -> Found:
        found = [item for item in map(scope.get, keys) if item and item[1] is not None]
        if not found:
            return []
        key, value = max(found, key=lambda item: item[1])
        return [(f"{key} = {value!r}", value)]
    return of


def _depth(where: str, keys: Callable[[Scope], list[str]] | None = None) -> Derived:
    """The layers of the backbone at ``where``, or of each at ``keys`` (the shallowest counts)."""
    return Derived(f"layers({where})", _models(keys or _one(where), _layers, "layers"))


def _room(where: str, keys: Callable[[Scope], list[str]] | None = None) -> Derived:
    """The positions of the backbone at ``where``, or of each at ``keys`` (the fewest count)."""
    return Derived(f"positions({where})", _models(keys or _one(where), _positions, "positions"))


def _prompted(length: str, *text: str) -> Derived:
    """A deep prompt's length and the longest text after it: their positions, in one sequence."""
    def of(scope: Scope) -> Found:
        prompt, longest = scope.get(length), _longest(*text)(scope)
        if not prompt or prompt[1] is None or not longest:
            return []
        return [(f"{prompt[0]} = {prompt[1]} + {longest[0][0]} = {prompt[1] + longest[0][1]}",
                 prompt[1] + longest[0][1])]
    return Derived(f"{length} + max({', '.join(text)})", of)


# --- the relations, section by section --------------------------------------------------------------------------------

SS, MC, PRE, DR, SR = "experiment", "modular_clir", "pretraining", "dense_retrieval", "sparse_retrieval"
SECTIONS = {SS: "experiment, datasets, ranker, methods, training, rerank (Semi-Siamese; a dataset's `training` "
                "overrides)", MC: MC, PRE: "pretraining (a run's `settings` override the section's)",
            DR: f"{DR} (a method's own {', '.join(DENSE_OVERRIDES)} override the section's)",
            SR: f"{SR} (a method's own {', '.join(SPLADE_OVERRIDES)} override the section's)"}
ROOM, DEPTH = _room("backbone.name"), _depth("backbone.name")
CLIR_ROOM, CLIR_DEPTH = _room(f"{MC}.backbone.name"), _depth(f"{MC}.backbone.name")
PRE_ROOM, PRE_DEPTH = _room("pretraining.backbone.name"), _depth("pretraining.backbone.name")
DENSE_ROOM = _room(f"{DR}.backbones", _each(f"{DR}.backbones"))
DENSE_DEPTH = _depth(f"{DR}.backbones", _each(f"{DR}.backbones"))
SPARSE_ROOM = _room(f"{SR}.backbones", _each(f"{SR}.backbones", "name"))
SPARSE_DEPTH = _depth(f"{SR}.backbones", _each(f"{SR}.backbones", "name"))
RERANKER_ROOM = _room(f"{SR}.rerankers.models", _each(f"{SR}.rerankers.models", "backbone"))
QUERIES = Derived("queries(dataset)", lambda scope: (_queries("dataset.topics")(scope)       # its topics', or
                                                    or _queries("dataset.irds")(scope)))      # its own
VALID_QUERIES = Derived("queries(dataset.splits.valid)", _queries("dataset.splits.valid"))
FROM_BM25, RUN = "the BM25 run it draws from", "a schedule within the run it belongs to"

RELATIONS: tuple[Relation, ...] = (
    # experiment, datasets, ranker, methods, training, rerank (Semi-Siamese)
    Relation(SS, "ranker.max_query_len", "ranker.max_seq_len", "[CLS], two [SEP] and one document token", slack=4),
    Relation(SS, "ranker.max_seq_len", ROOM, "the backbone's position embeddings"),
    Relation(SS, Derived("methods.prompt.length + ranker.max_query_len",
                         _summed("methods.prompt.length", "ranker.max_query_len")), "ranker.max_seq_len",
             "prompts take their positions from the sequence; the query, [CLS], two [SEP] and a document token "
             "need the rest", slack=4),
    Relation(SS, "methods.ss_prefix.common_length", "methods.prefix.length",
             "the concat variant keeps the rest of the positions role-specific", strict=True),
    Relation(SS, "backbone.layers", DEPTH, "more would add untrained layers"),
    Relation(SS, "rerank.depth", "bm25.depth", "the candidates it reranks"),
    Relation(SS, "training.train_depth", "bm25.depth", FROM_BM25),
    Relation(SS, "training.micro_batch", "training.batch_size", "micro-batches split a batch"),
    Relation(SS, "training.batch_size", "training.pairs_per_epoch", "an epoch holds at least one batch"),
    Relation(SS, Derived("cutoffs(experiment.metrics)", _cutoffs("experiment.metrics")), "bm25.depth",
             "a ranking ends at the BM25 candidates"),
    Relation(SS, "dataset.folds.n", QUERIES, "each fold tests at least one query"),
    Relation(SS, "dataset.validation_sample.queries", VALID_QUERIES, "a sample of the validation queries"),
    # modular_clir
    Relation(MC, f"{MC}.backbone.layers", CLIR_DEPTH, "more would add untrained layers"),
    Relation(MC, f"{MC}.rerank.depth", f"{MC}.prerank.dense.depth", "the pre-ranking it reranks"),
    Relation(MC, f"{MC}.rerank.depth", f"{MC}.prerank.bm25.depth", "the pre-ranking it reranks"),
    Relation(MC, f"{MC}.ranking.train.train_depth", "bm25.depth", FROM_BM25 + " (of ranking.dataset)"),
    Relation(MC, f"{MC}.ranking.train.max_len", CLIR_ROOM, "the backbone's position embeddings"),
    Relation(MC, f"{MC}.rerank.max_len", CLIR_ROOM, "the backbone's position embeddings"),
    Relation(MC, f"{MC}.ranking.train.warmup", f"{MC}.ranking.adapter.steps", RUN),
    Relation(MC, f"{MC}.ranking.train.warmup", f"{MC}.ranking.full.steps", RUN),
    Relation(MC, f"{MC}.ranking.train.warmup", f"{MC}.ranking.sftm.phase_steps[0]", RUN + " (each phase warms up)"),
    Relation(MC, f"{MC}.ranking.train.warmup", f"{MC}.ranking.sftm.phase_steps[1]", RUN + " (each phase warms up)"),
    Relation(MC, Derived(f"cutoff({MC}.metric)", _cutoffs(f"{MC}.metric")), f"{MC}.rerank.depth",
             "a reranking ends at its depth"),
    # pretraining
    Relation(PRE, "pretraining.settings.skip_from", PRE_DEPTH,
             "the Condenser head's skip connection reads a lower layer than the last", strict=True),
    Relation(PRE, "pretraining.settings.max_len", PRE_ROOM, "the backbone's position embeddings"),
    Relation(PRE, "pretraining.backbone.mlm_head.block_size", PRE_ROOM,
             "the backbone's position embeddings"),
    Relation(PRE, "pretraining.settings.chunk", "pretraining.settings.batch_size", "rows a batch holds: two per text",
             scale=2),
    Relation(PRE, Derived("run.prompts.length + pretraining.settings.max_len",
                          _summed("run.prompts.length", "pretraining.settings.max_len")), PRE_ROOM,
             "deep prompts shift the text's positions"),
    # dense_retrieval
    Relation(DR, f"{DR}.layers", DENSE_DEPTH, "more would add untrained layers"),
    Relation(DR, f"{DR}.train.negative_depth", "bm25.depth", FROM_BM25),
    Relation(DR, f"{DR}.mining.depth", "bm25.depth", FROM_BM25),
    Relation(DR, f"{DR}.mining.depth", f"{DR}.search.depth", "the first-round run it draws from"),
    Relation(DR, f"{DR}.mining.sample", f"{DR}.mining.depth", "a sample of the mined depth"),
    Relation(DR, f"{DR}.train.passages", f"{DR}.train.negative_depth", "one relevant and distinct negatives",
             slack=-1),
    Relation(DR, f"{DR}.train.passages", f"{DR}.mining.sample", "one relevant and distinct mined negatives",
             slack=-1),
    Relation(DR, Derived(f"max({DR}.train.q_max_len, p_max_len)", _longest(f"{DR}.train.q_max_len",
                                                                              f"{DR}.train.p_max_len")),
             DENSE_ROOM, "the backbones' position embeddings"),
    Relation(DR, _prompted("method.length", f"{DR}.train.q_max_len", f"{DR}.train.p_max_len"),
             DENSE_ROOM, "deep prompts shift the text's positions (P-tuning v2)"),
    Relation(DR, Derived(f"cutoffs({DR}.metrics)", _cutoffs(f"{DR}.metrics")), f"{DR}.search.depth",
             "a ranking ends at the search depth"),
    Relation(DR, f"{DR}.figure.passages", Derived(f"documents({DR}.dataset)", _documents(f"{DR}.dataset")),
             "passages drawn from the dataset"),
    # sparse_retrieval
    Relation(SR, f"{SR}.layers", SPARSE_DEPTH, "more would add untrained layers"),
    Relation(SR, f"{SR}.train.negative_depth", "bm25.depth", FROM_BM25),
    Relation(SR, f"{SR}.train.validation_depth", "bm25.depth", FROM_BM25),
    Relation(SR, f"{SR}.train.warmup_steps", f"{SR}.train.steps", RUN),
    Relation(SR, f"{SR}.train.regularisation.warmup_steps", f"{SR}.train.steps", RUN + " (FLOPS' λ warm-up T)"),
    Relation(SR, f"{SR}.train.validate_every", f"{SR}.train.steps", RUN),
    Relation(SR, Derived(f"max({SR}.train.q_max_len, d_max_len)", _longest(f"{SR}.train.q_max_len",
                                                                               f"{SR}.train.d_max_len")),
             SPARSE_ROOM, "the backbones' position embeddings"),
    Relation(SR, Derived(f"cutoffs({SR}.metrics)", _cutoffs(f"{SR}.metrics")), f"{SR}.index.depth",
             "a ranking ends at the index's search depth"),
    Relation(SR, f"{SR}.rerankers.train.negative_depth", "bm25.depth", FROM_BM25),
    Relation(SR, f"{SR}.rerankers.train.validation_depth", "bm25.depth", FROM_BM25),
    Relation(SR, f"{SR}.rerankers.train.warmup_steps", f"{SR}.rerankers.train.steps", RUN),
    Relation(SR, f"{SR}.rerankers.train.validate_every", f"{SR}.rerankers.train.steps", RUN),
    Relation(SR, f"{SR}.rerankers.rerank.depth", f"{SR}.index.depth", "the SPLADE run it reranks"),
    Relation(SR, f"{SR}.rerankers.train.max_len", RERANKER_ROOM,
             "the rerankers' position embeddings"),
)


def _scopes(config: dict, section: str) -> Iterator[Scope]:
    """The section as each of its jobs sees it: the config alone, then under each override."""
    yield Scope(config)
    if section == SS:
        for name, spec in config["datasets"].items():
            yield Scope(config, (Layer("training", f"datasets.{name}.training", spec.get("training", {})),
                                 Layer("dataset", f"datasets.{name}", spec)))
    elif section == PRE:
        for name, spec in config[PRE]["runs"].items():
            yield Scope(config, (Layer("pretraining.settings", f"pretraining.runs.{name}.settings",
                                       spec.get("settings", {})),
                                 Layer("run", f"pretraining.runs.{name}", spec)))
    elif section == DR:
        for name, spec in config[DR]["methods"].items():
            own = {key: spec[key] for key in DENSE_OVERRIDES if key in spec}
            yield Scope(config, (Layer(f"{DR}.train", f"{DR}.methods.{name}", own),
                                 Layer("method", f"{DR}.methods.{name}", spec)))
        for paper, figures in (config[DR].get("figures") or {}).items():
            for name, spec in (figures or {}).items():
                yield Scope(config, (Layer(f"{DR}.figure", f"{DR}.figures.{paper}.{name}", spec),))
    elif section == SR:
        for name, spec in config[SR]["methods"].items():
            own = {key: spec[key] for key in SPLADE_OVERRIDES if key in spec}
            yield Scope(config, (Layer(f"{SR}.train", f"{SR}.methods.{name}", own),))


def check(config: dict) -> None:
    """Every relation of every section the config has, before any job: RelationError on the first broken one."""
    for section in dict.fromkeys(relation.section for relation in RELATIONS):
        if section != SS and not config.get(section):
            continue
        relations = [relation for relation in RELATIONS if relation.section == section]
        for scope in _scopes(config, section):
            for relation in relations:
                relation.check(scope)


def markdown() -> str:
    """The relations as the docs list them: a table per section."""
    lines: list[str] = []
    for section in dict.fromkeys(relation.section for relation in RELATIONS):
        lines += [f"### {SECTIONS[section]}", "", "| relation | why |", "|---|---|"]
        lines += [f"| `{relation.statement()}` | {relation.why} |" for relation in RELATIONS
                  if relation.section == section]
        lines.append("")
    return "\n".join(lines)
