"""The hashed locks `make install` installs (envs/requirements.lock, envs/no-deps.lock; `make lock` writes them) say
what requirements.txt and envs/no-deps.txt pin: a pin changed without `make lock` fails here, not on a user's
machine; every locked distribution carries its hashes, and the environment the tests run in is the one locked."""
from __future__ import annotations

import re
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\;]+)", re.MULTILINE)


def pins(path: Path) -> dict[str, str]:
    """The ``name==version`` lines of a requirements or lock file, by canonical name."""
    return {canonicalize_name(name): version for name, version in PIN.findall(path.read_text())}


def locked(path: Path) -> dict[str, list[str]]:
    """A lock's distributions, each with the sha256 values it lists."""
    entries = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", path.read_text())
    return {canonicalize_name(PIN.match(entry)[1]): re.findall(r"--hash=sha256:([0-9a-f]{64})", entry)
            for entry in entries if PIN.match(entry)}


@pytest.mark.parametrize("wanted, lock", [("requirements.txt", "envs/requirements.lock"),
                                          ("envs/no-deps.txt", "envs/no-deps.lock")])
def test_the_lock_pins_what_the_requirements_pin_each_with_its_hashes(wanted, lock):
    pinned, found = pins(REPO / wanted), pins(REPO / lock)
    assert {name: (version, found.get(name)) for name, version in pinned.items() if found.get(name) != version} == {}
    assert [name for name, hashes in locked(REPO / lock).items() if not hashes] == []


def test_the_lock_leaves_torch_and_its_cuda_libraries_to_their_own_pip_call():
    names = set(pins(REPO / "envs/requirements.lock"))
    assert {name for name in names if name == "torch" or name.startswith(("nvidia-", "triton", "cuda-"))} == set()
    assert {"sympy", "networkx", "filelock"} <= names          # the CPU build's own dependencies are locked


def test_this_environment_is_the_locked_one():
    """What `make install` installed: every locked distribution at its locked version, in the environment's own
    site-packages (setuptools, once imported by any test of this process, appends its vendored copies of
    importlib-metadata, packaging, platformdirs and zipp to sys.path: they are not what was installed)."""
    site = list(dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib")))
    installed = {canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions(path=site)}
    wanted = {**pins(REPO / "envs/requirements.lock"), **pins(REPO / "envs/no-deps.lock")}
    assert {name: (version, installed.get(name)) for name, version in wanted.items()
            if installed.get(name) != version} == {}


def test_the_lock_resolves_torchs_dependencies_for_the_torch_make_install_installs():
    """`make install` pins torch by version alone; the lock's torch (envs/torch-cpu.txt, its CPU build) is the same."""
    installed = re.findall(r"pip install --quiet torch==(\S+)", (REPO / "Makefile").read_text())
    locked_for = pins(REPO / "envs/torch-cpu.txt")["torch"]
    assert installed and {version.split("+")[0] for version in [*installed, locked_for]} == {installed[0]}
