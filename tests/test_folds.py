"""Fold assignment, rotation and validation (REFERENCE.md §2)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from peftir.data import folds

QIDS = [str(q) for q in range(1, 48)]  # 47 queries: folds of 9 or 10
SEEDED = {"folds": {"scheme": "seeded", "n": 5, "seed": 42}}


def _doc(groups: dict[str, list[str]]) -> dict:
    return {"dataset": "toy", "scheme": "file", "folds": groups, "source": "test"}


def test_rotation_test_k_valid_k_minus_1_wrapping() -> None:
    doc = folds.make_folds("toy", SEEDED, QIDS)
    for k in range(1, 6):
        split = folds.rotation(doc, k)
        assert split["test"] == doc["folds"][str(k)]
        assert split["valid"] == doc["folds"][str(5 if k == 1 else k - 1)]
        others = [str(f) for f in range(1, 6) if str(f) not in (str(k), str(5 if k == 1 else k - 1))]
        assert sorted(split["train"]) == sorted(q for f in others for q in doc["folds"][f])
        parts = [set(split[name]) for name in ("train", "valid", "test")]
        assert sum(len(p) for p in parts) == len(set().union(*parts)) == len(QIDS)
    assert folds.rotation(doc, "1") == folds.rotation(doc, 1)


def test_rotation_rejects_unknown_fold() -> None:
    with pytest.raises(ValueError):
        folds.rotation(folds.make_folds("toy", SEEDED, QIDS), 6)


def test_seeded_is_deterministic_balanced_and_seed_dependent() -> None:
    doc = folds.make_folds("toy", SEEDED, QIDS)
    again = folds.make_folds("toy", SEEDED, list(reversed(QIDS)))
    assert doc == again
    sizes = [len(ids) for ids in doc["folds"].values()]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(QIDS)
    assert doc["seed"] == 42 and doc["scheme"] == "seeded" and doc["source"]
    other = folds.make_folds("toy", {"folds": {"scheme": "seeded", "n": 5, "seed": 7}}, QIDS)
    assert other["folds"] != doc["folds"]


def test_seeded_assignment_is_pinned() -> None:
    """Guards the 'same folds on any machine' promise against changes to the algorithm."""
    doc = folds.make_folds("toy", {"folds": {"scheme": "seeded", "n": 3, "seed": 1}}, ["a", "b", "c", "d", "e", "f"])
    assert doc["folds"] == {"1": ["a", "c"], "2": ["d", "e"], "3": ["b", "f"]}


def test_file_path_overrides_scheme(tmp_path: Path) -> None:
    tsv = tmp_path / "folds.tsv"
    tsv.write_text("".join(f"{q}\t{int(q) % 3 + 1}\n" for q in QIDS))
    spec = {"folds": {"scheme": "seeded", "n": 5, "seed": 42, "path": str(tsv)}}
    doc = folds.make_folds("toy", spec, QIDS)
    assert doc["source"] == str(tsv) and set(doc["folds"]) == {"1", "2", "3"}
    assert doc["folds"]["1"] == [q for q in QIDS if int(q) % 3 == 0]
    assert folds.fold_ids(spec) == ["1", "2", "3"]


def test_file_json_folds_document_round_trip(tmp_path: Path) -> None:
    original = folds.make_folds("toy", SEEDED, QIDS)
    path = tmp_path / "folds.json"
    folds.write_folds(path, original)
    assert folds.read_folds(path) == original
    doc = folds.make_folds("toy", {"folds": {"scheme": "file", "path": str(path)}}, QIDS)
    assert doc["folds"] == original["folds"] and doc["scheme"] == "file"


def test_presplit(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = {"tr": ["1", "2", "3"], "dv": ["4"], "te": ["5", "6"]}
    monkeypatch.setattr(folds, "_query_ids", lambda irds_id, prefixed=None: ids[irds_id])
    monkeypatch.setattr(folds.split_queries, "prefixes", lambda spec: {})    # the splits share no query id
    spec = {"splits": {"train": "tr", "valid": "dv", "test": "te"}, "folds": {"scheme": "presplit"}}
    doc = folds.make_folds("marco", spec, [str(q) for q in range(1, 8)])
    assert doc["scheme"] == "presplit" and doc["splits"] == {"train": ids["tr"], "valid": ids["dv"], "test": ids["te"]}
    assert folds.rotation(doc, 1) == folds.rotation(doc, "3") == doc["splits"]
    assert folds.fold_ids(spec) == ["1"]


def test_published_reads_each_fold_subset(monkeypatch: pytest.MonkeyPatch) -> None:
    subsets = {f"robust/fold{i}": QIDS[i - 1::5] for i in range(1, 6)}
    monkeypatch.setattr(folds, "_query_ids", lambda irds_id: subsets[irds_id])
    spec = {"folds": {"scheme": "published", "irds": list(subsets)}}
    doc = folds.make_folds("robust04", spec, QIDS)
    assert doc["folds"]["3"] == subsets["robust/fold3"] and doc["source"] == list(subsets)
    assert folds.fold_ids(spec) == ["1", "2", "3", "4", "5"]


def test_overlapping_folds_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "folds.json"
    path.write_text(json.dumps({"folds": {"1": ["1", "2"], "2": ["2", "3"], "3": ["4"]}}))
    with pytest.raises(ValueError, match="query 2 is in both"):
        folds.make_folds("toy", {"folds": {"path": str(path)}}, ["1", "2", "3", "4"])


def test_unknown_qids_are_named(tmp_path: Path) -> None:
    path = tmp_path / "folds.tsv"
    path.write_text("1\t1\n2\t2\n3\t3\nX99\t3\n")
    with pytest.raises(ValueError, match="X99"):
        folds.make_folds("toy", {"folds": {"path": str(path)}}, ["1", "2", "3"])


def test_empty_fold_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "folds.json"
    path.write_text(json.dumps({"folds": {"1": ["1"], "2": [], "3": ["3"]}}))
    with pytest.raises(ValueError, match="empty"):
        folds.make_folds("toy", {"folds": {"path": str(path)}}, ["1", "2", "3"])


def test_fold_ids(tmp_path) -> None:
    assert folds.fold_ids(SEEDED) == ["1", "2", "3", "4", "5"]
    assert folds.fold_ids({"folds": {"scheme": "seeded", "n": 3, "seed": 1}}) == ["1", "2", "3"]
    assert folds.fold_ids({"folds": {"scheme": "published", "irds": ["a", "b", "c", "d"]}}) == ["1", "2", "3", "4"]
    (tmp_path / "folds.tsv").write_text("q1\t1\nq2\t2\nq3\t3\nq4\t4\n")
    assert folds.fold_ids({"folds": {"scheme": "file", "path": str(tmp_path / "folds.tsv")}}) == ["1", "2", "3", "4"]
    assert folds.fold_ids({"folds": {"scheme": "presplit"}}) == ["1"]
