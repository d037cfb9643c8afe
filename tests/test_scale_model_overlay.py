"""The scale models' own configuration file (``scale_model.overlay``), checked fast: every paper configuration's
overlay validates, names no backbone a hub would be asked for, and shrinks sizes, not choices."""
from pathlib import Path

import pytest
import yaml

import scale_model
from peftir.contract.backbones import looks_local
from peftir.pipeline.config import load_config
from test_scale_models import PAPERS

REPO = Path(__file__).resolve().parents[1]


def _names(config: dict) -> list[str]:
    """Every backbone name of a merged configuration."""
    names = [config["backbone"]["name"]]
    for section in ("pretraining", "modular_clir"):
        if config.get(section):
            names.append(config[section]["backbone"]["name"])
    if config.get("pretraining"):              # a run's own backbone (DPTDR Table 6's BERT-base)
        names += [spec["backbone"] for spec in config["pretraining"]["runs"].values() if "backbone" in spec]
    if config.get("modular_clir"):
        names.append(config["modular_clir"]["prerank"]["dense"]["model"])
    if config.get("dense_retrieval"):
        names += list(config["dense_retrieval"]["backbones"].values())
    if config.get("sparse_retrieval"):
        names += [spec["name"] for spec in config["sparse_retrieval"]["backbones"].values()]
        names += [spec["backbone"] for spec in ((config["sparse_retrieval"].get("rerankers") or {})
                                                .get("models", {}).values())]
    return names


@pytest.fixture(scope="module")
def backbones(tmp_path_factory):
    return tmp_path_factory.mktemp("scale")


@pytest.mark.scale                 # builds every family's tiny backbone: with the scale models, not in `make test`
@pytest.mark.parametrize("paper", PAPERS)
def test_a_scale_overlay_validates_and_names_only_local_backbones(paper, backbones, tmp_path):
    files = [str(REPO / name) for name in PAPERS[paper]["files"]]
    paper_config = load_config(REPO, files)
    overlay = scale_model.overlay(paper_config, backbones)
    (tmp_path / "scale.yaml").write_text(yaml.safe_dump(overlay))
    scaled = load_config(REPO, [*files, str(tmp_path / "scale.yaml")])
    hub = [name for name in _names(scaled)
           if not name.startswith(("embedded:", "pretrained:")) and not looks_local(name)]
    assert hub == []
    assert scaled["tables"] == paper_config["tables"]
    assert scaled["experiment"]["rankers"] == paper_config["experiment"]["rankers"]
    assert scaled["experiment"]["seeds"] == paper_config["experiment"]["seeds"][:1]
    owned = {key for name in files for key, value in (yaml.safe_load(Path(name).read_text()) or {}).items()
             if value}
    for section, key in (("pretraining", "settings"), ("dense_retrieval", "train"), ("sparse_retrieval", "train")):
        if section in owned:                # the paper's own sections (the others are the embedded default's)
            before, after = paper_config[section][key], scaled[section][key]
            assert after["steps"] == max(scale_model.MINIMUM, -(-before["steps"] // scale_model.STEP_FACTOR))
            assert after["chunk"] == scale_model.CHUNK


def test_an_unknown_hub_name_is_refused_rather_than_downloaded(backbones):
    config = load_config(REPO, [])
    config["backbone"]["name"] = "someone/unknown-model"
    with pytest.raises(KeyError, match="someone/unknown-model"):
        scale_model.overlay(config, backbones)


def _without_reports(config):
    """A configuration with every ``tables`` and ``figures`` section left out, at any depth."""
    if not isinstance(config, dict):
        return config
    return {key: _without_reports(value) for key, value in config.items() if key not in ("tables", "figures")}


def _narrows(shaped, whole) -> bool:
    """Whether ``shaped`` is ``whole`` with items left out of its lists (their order kept) and nothing else changed:
    the same keys, the same values, each list a sub-list."""
    if isinstance(whole, dict):
        return isinstance(shaped, dict) and shaped.keys() == whole.keys() and all(
            _narrows(shaped[key], whole[key]) for key in whole)
    if isinstance(whole, list) and isinstance(shaped, list) and shaped != whole:
        rest = iter(whole)                          # each kept item found after the one before
        return bool(shaped) and all(any(item == other for other in rest) for item in shaped)
    return shaped == whole


def _reports(config, path=()):
    """Every ``tables`` or ``figures`` section of a configuration, by where it is."""
    if not isinstance(config, dict):
        return {}
    found = {path + (key,): value for key, value in config.items() if key in ("tables", "figures")}
    for key, value in config.items():
        found.update(_reports(value, path + (key,)))
    return found


def test_every_shape_is_of_a_scale_model_and_only_leaves_rows_out_of_its_tables_and_figures():
    """A shape (scale_shapes/<name>.yaml) validates over its paper configuration and leaves items out of the lists
    of its tables and figures (rows, columns, pairs, rankers, reduction factors), keeping every table and figure and
    every other value: never a setting or a size of how they are computed."""
    shapes = sorted((REPO / "tests" / "scale_shapes").glob("*.yaml"))
    assert shapes and {path.stem for path in shapes} <= set(PAPERS), [path.name for path in shapes]
    for path in shapes:
        files = [str(REPO / name) for name in PAPERS[path.stem]["files"]]
        whole, shaped = load_config(REPO, files), load_config(REPO, [*files, str(path)])
        assert shaped != whole, path.name
        assert _without_reports(shaped) == _without_reports(whole), path.name
        assert all(_narrows(shaped_reports, _reports(whole)[where])
                   for where, shaped_reports in _reports(shaped).items()), path.name


def test_a_shape_that_adds_or_changes_what_a_table_holds_is_told_apart():
    whole = {"tables": {"t": {"rows": [{"label": "A"}, {"label": "B"}, {"label": "C"}], "baseline": "A"}}}
    assert _narrows({"tables": {"t": {"rows": [{"label": "A"}, {"label": "C"}], "baseline": "A"}}}, whole)
    for changed in ({"t": {"rows": [{"label": "C"}, {"label": "A"}], "baseline": "A"}},       # reordered
                    {"t": {"rows": [{"label": "A"}, {"label": "D"}], "baseline": "A"}},       # added
                    {"t": {"rows": [{"label": "A"}], "baseline": "B"}},                       # another baseline
                    {"t": {"rows": [], "baseline": "A"}},                                     # emptied
                    {"t": {"rows": [{"label": "A"}]}},                                        # a key dropped
                    {}):                                                                      # the table dropped
        assert not _narrows({"tables": changed}, whole), changed
