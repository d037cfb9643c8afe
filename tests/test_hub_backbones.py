"""Hub backbones pinned to a commit (``org/model@<commit>``, ``peftir.contract.backbones``): a job reads that
commit's snapshot and no other, whichever loader reads it, an unpinned name reads ``main``, and either way the
job's record names the commit read. The hub is out of reach here (offline mode), so each test builds a Hugging Face
cache in the layout ``huggingface_hub`` writes (``models--org--name/snapshots/<commit>``, ``refs/main``) from the
embedded MiniLM's files."""
from __future__ import annotations

import shutil
from pathlib import Path

import huggingface_hub.constants
import pytest

from peftir.contract import backbones
from peftir.contract.backbones import EMBEDDED, hub_pin, resolve
from peftir.contract.checks import ConfigError, check_backbone_name
from peftir.models import backbone as backbone_module
from peftir.pipeline import cost
from peftir.provenance import records

REPO = "peftir-test/minilm"
PINNED, MAIN = "a" * 40, "b" * 40


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache holding ``REPO`` at two commits, ``MAIN`` being what its ``main`` points at; the hub offline."""
    storage = tmp_path / "hub" / f"models--{REPO.replace('/', '--')}"
    for commit in (PINNED, MAIN):
        shutil.copytree(resolve(EMBEDDED), storage / "snapshots" / commit)
    (storage / "refs").mkdir()
    (storage / "refs" / "main").write_text(MAIN)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(backbones, "_LOADED", {})
    return storage


def test_a_pinned_name_parses_into_its_repository_and_commit():
    assert hub_pin(f"{REPO}@{PINNED}") == (REPO, PINNED)
    assert hub_pin(f"bert-base-uncased@{PINNED}") == ("bert-base-uncased", PINNED)
    assert hub_pin(REPO) is None
    assert hub_pin(f"{REPO}@main") is None           # a branch moves: only a full commit pins
    assert hub_pin(f"{REPO}@{PINNED[:12]}") is None


def test_a_pinned_name_loads_its_commit_not_main_and_the_record_names_it(hub_cache: Path):
    loaded = backbone_module.load(f"{REPO}@{PINNED}", layers=1)
    assert loaded.model.config.num_hidden_layers == 1
    assert resolve(f"{REPO}@{PINNED}") == str(hub_cache / "snapshots" / PINNED)
    assert records.job_record("r", {}, {}, {}, {}, "start", "end")["hub"] == {REPO: PINNED}


def test_an_unpinned_name_reads_main_and_the_record_names_mains_commit(hub_cache: Path):
    assert resolve(REPO) == str(hub_cache / "snapshots" / MAIN)
    assert backbones.hub_commits() == {REPO: MAIN}


def test_a_commit_neither_cached_nor_reachable_fails_naming_it(hub_cache: Path):
    missing = "c" * 40
    with pytest.raises(RuntimeError, match=rf"hub backbone {REPO}@{missing}: not in the Hugging Face cache, and "
                                           r"the hub could not be asked \(OfflineModeIsEnabled"):
        resolve(f"{REPO}@{missing}")
    assert backbones.hub_commits() == {}


def test_a_cached_snapshot_without_its_weights_is_not_read_as_complete(hub_cache: Path):
    """An interrupted download (or jobs starting together) leaves a snapshot folder with its small files only."""
    partial = "d" * 40
    (hub_cache / "snapshots" / partial).mkdir()
    shutil.copy(hub_cache / "snapshots" / PINNED / "config.json", hub_cache / "snapshots" / partial)
    with pytest.raises(RuntimeError, match=rf"hub backbone {REPO}@{partial}: its cached snapshot .* lacks its "
                                           r"config.json or its weights"):
        resolve(f"{REPO}@{partial}")


@pytest.mark.parametrize("loader", ["sentence_encoder", "masked_lm", "clir_encoder", "dense_encoder"])
def test_every_loader_reads_a_pinned_name_at_its_commit(hub_cache: Path, loader: str):
    from peftir.clir.modular import load_encoder
    from peftir.dense.train import encoder_of
    from peftir.execution.seam import CPU
    from peftir.retrieval.sentence_encoder import sentence_encoder
    from peftir.splade.encoder import masked_lm

    (hub_cache / "snapshots" / MAIN / "config.json").write_text("{}")      # main unreadable: only the pin loads
    name = f"{REPO}@{PINNED}"
    load = {"sentence_encoder": lambda: sentence_encoder(name, CPU), "masked_lm": lambda: masked_lm(name, 1),
            "clir_encoder": lambda: load_encoder(name, with_mlm_head=False, pooler=False),
            "dense_encoder": lambda: encoder_of(name, 1)}[loader]
    assert load() is not None
    assert backbones.hub_commits() == {REPO: PINNED}


def test_one_copy_of_the_weights_per_folder_is_fetched():
    files = ["config.json", "model.safetensors", "pytorch_model.bin", "training_args.bin", "onnx/model.onnx",
             "openvino/openvino_model.bin", "2_Dense/pytorch_model.bin", "2_Dense/config.json"]
    assert sorted(backbones.weight_files(files)) == ["2_Dense/pytorch_model.bin", "model.safetensors"]
    assert backbones.weight_files(["pytorch_model.bin", "training_args.bin"]) == ["pytorch_model.bin"]


def test_directories_and_built_names_never_reach_the_hub(hub_cache: Path, tmp_path: Path):
    local = tmp_path / "model"
    local.mkdir()
    assert resolve(str(local)) == str(local)
    assert resolve("embedded:multilingual-e5-small") == "embedded:multilingual-e5-small"
    assert resolve("pretrained:condenser") == "results/pretrained/condenser"
    assert backbones.hub_commits() == {}


def test_the_plan_reads_and_sizes_a_pinned_name_as_its_repository(hub_cache: Path):
    assert backbones.config_file(f"{REPO}@{PINNED}") == hub_cache / "snapshots" / PINNED / "config.json"
    assert backbones.config_file(f"{REPO}@{'c' * 40}") is None          # not cached: the job fetches it
    pinned = cost.architecture(f"bert-base-uncased@{PINNED}")
    assert pinned == cost.architecture("bert-base-uncased")


@pytest.mark.parametrize("name", [f"{REPO}@main", f"{REPO}@{PINNED[:7]}", f"{REPO}@{PINNED.upper()}"])
def test_a_pin_that_is_not_a_full_commit_is_refused_before_any_job(name):
    with pytest.raises(ConfigError, match=r"config key backbone.name = .*pinned as <repository>@<commit>"):
        check_backbone_name({}, name, "backbone.name")
    check_backbone_name({}, f"{REPO}@{PINNED}", "backbone.name")
    check_backbone_name({}, "/scratch/user@cluster/model", "backbone.name")         # a directory may hold an @
