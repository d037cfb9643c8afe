"""The relations between configuration keys that jobs rely on, as data, checked before any job runs.

The schema checks every key alone. A value valid alone can still be wrong against another: a depth beyond the ranking
it draws from, a warm-up longer than its run, a layer the backbone does not have, more folds than queries. Each such
pair is one ``Relation`` (``value`` + ``slack`` at most ``bound``) of its config section's ``Section``, which the
section's system declares (``peftir.<system>.relations``); ``peftir.pipeline.relations`` joins them, so the list is
complete in one place, ``docs/configuration/relations.md`` is written from it (``markdown``; a test keeps the two
equal), and a new system adds its section there. What a key *names* (a dataset, a run, a method of another section)
is checked by ``peftir.pipeline.config`` and each system's config checker; the same page lists those.

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

from ..data.sizes import document_count, query_count
from . import backbones as pretrained
from .checks import ConfigError
from .measures import measure


class RelationError(ConfigError):
    """A broken relation: one line naming both keys and their values."""


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
    if found is None or not isinstance(found[1], (int, float)) or isinstance(found[1], bool):
        return []                 # unset, or "auto": sized by the job itself, within its bounds by construction
    return [(f"{found[0]} = {found[1]!r}", found[1])]


# --- derived sides: what the backbones, the datasets and the metrics say ---------------------------------------------

def _model_config(config: dict, name: str) -> dict | None:
    """The Hugging Face config of a backbone, where it can be read here (a ``pretrained:<run>`` backbone's: that of
    the model its run starts from)."""
    name = pretrained.starting_model(config, name)
    found = pretrained.config_file(name) if name else None
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


def each(prefix: str, field: str = "") -> Callable[[Scope], list[str]]:
    """The keys ``prefix.<name>[.field]`` of every entry of the dict at ``prefix``."""
    def keys(scope: Scope) -> list[str]:
        entries = scope.get(prefix)
        return [f"{prefix}.{name}" + (f".{field}" if field else "") for name in (entries[1] if entries else {})]
    return keys


def _one(key: str) -> Callable[[Scope], list[str]]:
    return lambda scope: [key]


def queries(key: str) -> Callable[[Scope], Found]:
    """The queries of the ir_datasets ids at ``key`` (a dataset's own, its topics, a split), from their metadata."""
    def of(scope: Scope) -> Found:
        written = scope.get(key)
        ids = written[1] if written else None
        counts = [query_count(irds) for irds in ([ids] if isinstance(ids, str) else ids or [])]
        if not counts or 0 in counts:
            return []
        return [(f"{sum(counts)}, the queries of {written[0]} = {ids!r}", sum(counts))]
    return of


def documents(key: str) -> Callable[[Scope], Found]:
    """The documents of the dataset named at ``key``, from its metadata."""
    def of(scope: Scope) -> Found:
        written = scope.get(key)
        spec = scope.config["datasets"].get(written[1]) if written else None
        count = document_count(spec["irds"]) if spec else 0
        return [(f"{count}, the documents of {written[0]} = {written[1]!r}", count)] if count else []
    return of


def cutoffs(key: str) -> Callable[[Scope], Found]:
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


def summed(*keys: str) -> Callable[[Scope], Found]:
    """``keys``' values added, named each (a prompt and the text after it in one sequence)."""
    def of(scope: Scope) -> Found:
        found = [scope.get(key) for key in keys]
        if any(item is None or item[1] is None for item in found):
            return []
        total = sum(item[1] for item in found)
        return [(" + ".join(f"{key} = {value!r}" for key, value in found) + f" = {total}", total)]
    return of


def longest(*keys: str) -> Callable[[Scope], Found]:
    """The largest of ``keys``' values (the longer of a query and a passage)."""
    def of(scope: Scope) -> Found:
        found = [item for item in map(scope.get, keys) if item and item[1] is not None]
        if not found:
            return []
        key, value = max(found, key=lambda item: item[1])
        return [(f"{key} = {value!r}", value)]
    return of


def depth(where: str, keys: Callable[[Scope], list[str]] | None = None) -> Derived:
    """The layers of the backbone at ``where``, or of each at ``keys`` (the shallowest counts)."""
    return Derived(f"layers({where})", _models(keys or _one(where), _layers, "layers"))


def room(where: str, keys: Callable[[Scope], list[str]] | None = None) -> Derived:
    """The positions of the backbone at ``where``, or of each at ``keys`` (the fewest count)."""
    return Derived(f"positions({where})", _models(keys or _one(where), _positions, "positions"))


def prompted(length: str, *text: str) -> Derived:
    """A deep prompt's length and the longest text after it: their positions, in one sequence."""
    def of(scope: Scope) -> Found:
        prompt, text_found = scope.get(length), longest(*text)(scope)
        if not prompt or prompt[1] is None or not text_found:
            return []
        return [(f"{prompt[0]} = {prompt[1]} + {text_found[0][0]} = {prompt[1] + text_found[0][1]}",
                 prompt[1] + text_found[0][1])]
    return Derived(f"{length} + max({', '.join(text)})", of)


FROM_BM25, WITHIN_RUN = "the BM25 run it draws from", "a schedule within the run it belongs to"
# a dataset's queries: its topics', or its own
QUERIES = Derived("queries(dataset)", lambda scope: queries("dataset.topics")(scope) or queries("dataset.irds")(scope))


@dataclass(frozen=True)
class Section:
    """One config section's relations, checked when the config has the section (``key``), in the scopes its jobs see
    it in: the config alone, then under each of its overrides (``overrides``)."""
    key: str
    title: str
    relations: tuple[Relation, ...]
    overrides: Callable[[dict], Iterator[Scope]] = lambda config: iter(())

    def check(self, config: dict) -> None:
        """RelationError on the first broken relation; nothing when the config has no such section."""
        if not config.get(self.key):
            return
        for scope in (Scope(config), *self.overrides(config)):
            for relation in self.relations:
                relation.check(scope)

    def markdown(self) -> list[str]:
        """The section's table as the docs list it."""
        return [f"### {self.title}", "", "| relation | why |", "|---|---|",
                *(f"| `{relation.statement()}` | {relation.why} |" for relation in self.relations), ""]
