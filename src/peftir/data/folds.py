"""Query folds: which queries train, validate and test each model.

The fold assignment is computed once per dataset and written to a JSON
document so that every later job (and every reader of the results) uses the
same, recorded split. Schemes (the dataset config's ``folds`` entry):

- ``seeded``: sorted query ids shuffled with ``random.Random(seed)``, dealt
  round-robin into ``n`` folds; identical on any machine.
- ``published``: each fold is an ir_datasets subset (e.g. the Huston & Croft
  Robust04 folds ``disks45/nocr/trec-robust-2004/fold1`` ... ``fold5``).
- ``file``: a user-supplied JSON folds document or TSV ``qid<TAB>fold``; a
  ``path`` key overrides whatever scheme is named.
- ``presplit``: the pre-assigned train/valid/test splits in ``spec["splits"]``.

Rotation for cross-validation (REFERENCE.md §2): test = fold k, valid = fold
k-1 (fold 1 validates on fold n), train = the rest.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Mapping

from ..files import atomic_write
from . import split_queries
from .trec import read_topics

SPLITS = ("train", "valid", "test")


def _config(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    if "folds" not in spec:
        raise KeyError("dataset config has no 'folds' entry (e.g. {scheme: seeded, n: 5, seed: 42})")
    return spec["folds"]


def _query_ids(irds_id: str, prefixed: split_queries.Prefixes | None = None) -> list[str]:
    """Query ids of an ir_datasets subset (prefixed as the export names them); reads queries only, never
    documents."""
    import ir_datasets  # lazy: DAG building must not pay for it

    return [split_queries.query_id(prefixed or {}, irds_id, query.query_id)
            for query in ir_datasets.load(irds_id).queries_iter()]


def _seeded(qids: list[str], n: int, seed: int) -> dict[str, list[str]]:
    shuffled = sorted(qids)
    random.Random(seed).shuffle(shuffled)
    return {str(fold): sorted(shuffled[fold - 1::n]) for fold in range(1, n + 1)}


def read_folds_file(path: str | Path) -> dict[str, dict[str, list[str]]]:
    """``{"folds": ...}`` or ``{"splits": ...}`` from a JSON folds document or a ``qid<TAB>fold`` TSV;
    a malformed file is a ValueError naming it (and, for the TSV, the line)."""
    try:
        text = Path(path).read_text()
    except OSError as problem:
        raise ValueError(f"cannot read the folds file: {problem.strerror}") from None
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
            key = "splits" if "splits" in doc else "folds"
            return {key: {str(name): [str(q) for q in ids] for name, ids in doc[key].items()}}
        except (ValueError, KeyError, AttributeError, TypeError) as problem:
            raise ValueError(f"{path}: not a folds document ({{\"folds\": {{name: [query ids]}}}} or "
                             f"{{\"splits\": ...}}): {problem}") from None
    folds: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            fields = line.split("\t")
            if len(fields) != 2 or not all(f.strip() for f in fields):
                raise ValueError(f"{path}, line {number}: expected query id<TAB>fold, got {line!r}")
            folds.setdefault(fields[1].strip(), []).append(fields[0].strip())
    return {"folds": folds}


def _assign(name: str, spec: Mapping[str, Any], qids: list[str]) -> dict[str, Any]:
    """The folds document before validation, from the scheme the config names."""
    config = _config(spec)
    scheme = "file" if "path" in config else config.get("scheme")
    if scheme == "seeded":
        n, seed = config["n"], config["seed"]
        return {"dataset": name, "scheme": scheme, "seed": seed, "folds": _seeded(qids, n, seed),
                "source": f"random.Random({seed}) shuffle of the sorted query ids, dealt round-robin"}
    if scheme == "file":
        groups = read_folds_file(config["path"])
        return {"dataset": name, "scheme": "presplit" if "splits" in groups else "file",
                **groups, "source": str(config["path"])}
    if scheme == "published":
        folds = {str(i): _query_ids(irds_id) for i, irds_id in enumerate(config["irds"], start=1)}
        return {"dataset": name, "scheme": scheme, "folds": folds, "source": list(config["irds"])}
    if scheme == "presplit":
        prefixed = split_queries.prefixes(spec)
        splits = {split: _query_ids(spec["splits"][split], prefixed) for split in SPLITS if split in spec["splits"]}
        return {"dataset": name, "scheme": scheme, "splits": splits, "source": dict(spec["splits"])}
    raise ValueError(f"{name}: unknown folds scheme {scheme!r}")


def make_folds(name: str, spec: Mapping[str, Any], qids: list[str]) -> dict[str, Any]:
    """Assign the dataset's queries ``qids`` to folds (or splits) and validate the result."""
    doc = _assign(name, spec, qids)
    validate(doc, qids)
    return doc


def _groups(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    return doc["splits"] if "splits" in doc else doc["folds"]


def validate(doc: Mapping[str, Any], qids: list[str]) -> None:
    """Every group non-empty, no query in two groups, only known queries, folds numbered 1..n."""
    groups = _groups(doc)
    known = set(qids)
    seen: dict[str, str] = {}
    for group, members in groups.items():
        if not members:
            raise ValueError(f"{doc['dataset']}: fold/split {group} is empty")
        for qid in members:
            if qid in seen:
                raise ValueError(f"{doc['dataset']}: query {qid} is in both {seen[qid]} and {group}")
            seen[qid] = group
    unknown = sorted(set(seen) - known)
    if unknown:
        raise ValueError(f"{doc['dataset']}: {len(unknown)} fold query ids not in the dataset: {unknown[:20]}")
    if "splits" in doc:
        if "test" not in groups or not set(groups) <= set(SPLITS):
            raise ValueError(f"{doc['dataset']}: splits must be test and any of train, valid; got {sorted(groups)}")
    elif set(groups) != {str(i) for i in range(1, len(groups) + 1)} or len(groups) < 3:
        raise ValueError(f"{doc['dataset']}: folds must be numbered 1..n with n >= 3, got {sorted(groups)}")


def rotation(doc: Mapping[str, Any], k: str | int) -> dict[str, list[str]]:
    """Train/valid/test query ids for fold ``k``: test k, valid k-1 (1 -> n), train the rest."""
    if "splits" in doc:
        return {split: list(doc["splits"].get(split, [])) for split in SPLITS}   # a test-only collection: no train
    n = len(doc["folds"])
    test = int(k)
    if not 1 <= test <= n:
        raise ValueError(f"fold {k} outside 1..{n}")
    valid = (test - 2) % n + 1
    train = [qid for fold in range(1, n + 1) if fold not in (test, valid) for qid in doc["folds"][str(fold)]]
    return {"train": train, "valid": list(doc["folds"][str(valid)]), "test": list(doc["folds"][str(test)])}


def test_queries(doc: Mapping[str, Any]) -> list[str]:
    """Every query some fold tests: all of them under cross-validation, the test split otherwise."""
    groups = [doc["splits"]["test"]] if "splits" in doc else doc["folds"].values()
    return sorted({qid for group in groups for qid in group})


def fold_ids(spec: Mapping[str, Any]) -> list[str]:
    """Fold names for the DAG (no ir_datasets calls): "1".."n", or ["1"] for pre-assigned splits."""
    config = _config(spec)
    if "path" in config:
        groups = read_folds_file(config["path"])
        n = 1 if "splits" in groups else len(groups["folds"])
    elif config.get("scheme") == "presplit":
        n = 1
    elif config.get("scheme") == "published":
        n = len(config["irds"])
    else:
        n = config["n"]
    return [str(i) for i in range(1, n + 1)]


def assign_folds(dataset: str, spec: Mapping[str, Any], queries: str | Path, output: str | Path) -> None:
    """The ``folds`` rule: assign the exported queries to folds (or splits) and write the document."""
    write_folds(output, make_folds(dataset, spec, list(read_topics(queries))))


def write_folds(path: str | Path, doc: Mapping[str, Any]) -> None:
    with atomic_write(path) as handle:
        json.dump(doc, handle, indent=1)
        handle.write("\n")


def read_folds(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
