"""Debian packages as a source of freely licensed multilingual text (Bibles, man pages, the Debian Reference).

The packages are fetched once from a Debian mirror and pinned by sha256, so every run reads the very bytes the
recorded results came from. They are read with the PyPI library ``python-debian`` (a .deb is an ``ar`` archive
holding a compressed tar of the files), so neither ``dpkg`` nor a Debian system is needed: a user on macOS
downloads the same .deb files and gets the same text.
"""
from __future__ import annotations

import hashlib
import http.client
import tarfile
import urllib.error
import urllib.request
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import IO, Iterable, Iterator, Mapping

from debian.arfile import ArError
from debian.debfile import DebFile

from ..errors import ActionableError
from ..files import atomic_write
from ..provenance.records import sha256
from ..data.trec import MalformedFileError

TIMEOUT_S = 60        # a mirror that answers nothing for a minute is down, not slow
CHUNK = 1 << 20


class PackageFetchError(ActionableError):
    """A package could not be downloaded, or what came is not the pinned file."""


def package_name(url: str) -> str:
    """The package a Debian pool URL names (``.../sword-text-web_426.0-1_all.deb`` -> ``sword-text-web``)."""
    return PurePosixPath(url).name.split("_")[0]


def _copy_hashing(source: IO[bytes], target: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := source.read(CHUNK):
        digest.update(chunk)
        target.write(chunk)
    return digest.hexdigest()


def fetch_package(url: str, sha256: str, output: str | Path) -> None:
    """Download the .deb at ``url`` to ``output`` and check it against the pinned ``sha256``.

    The file is written beside ``output`` and renamed only once complete and verified, so an interrupted or
    corrupted download never looks like the package to a later step."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, atomic_write(output, "wb") as handle:
            got = _copy_hashing(response, handle)
            if got != sha256.lower():
                raise PackageFetchError(
                    f"{url}: sha256 mismatch, expected {sha256.lower()}, got {got}: the mirror serves another "
                    f"version of the package; pin the new one (modular_clir.packages.{package_name(url)}: url, sha256) "
                    f"only after checking that it is what you want")
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError) as problem:
        raise PackageFetchError(
            f"cannot download {url}: {getattr(problem, 'reason', problem)}. Download the file by hand (any Debian "
            f"mirror's pool holds it under the same name) and place it at {output}, or set another mirror in the "
            f"config (modular_clir.packages.{package_name(url)}.url)") from None


def check_pinned(debs: Iterable[str | Path], pins: Mapping[str, str]) -> None:
    """Refuse a package whose bytes are not its pin's. A download is checked as it arrives, but a file placed by
    hand at ``results/modular-clir/packages/<name>.deb`` (a machine without the network) is never downloaded, and
    Snakemake never reruns ``debian_package`` for a file that exists: the jobs that read packages check them."""
    for deb in debs:
        name = Path(deb).stem
        if name not in pins:
            raise ActionableError(f"{deb}: no pin for the package {name!r} (modular_clir.packages.{name}: url, "
                                  f"sha256); pinned: {sorted(pins)}")
        got = sha256(deb)
        if got != pins[name].lower():
            raise PackageFetchError(
                f"{deb}: sha256 {got}, not the pinned {pins[name].lower()} (modular_clir.packages.{name}.sha256): "
                f"a file placed by hand is another version of the package, or damaged. Replace it with the pinned "
                f"file, or delete it so that it is fetched again")


def _open(deb: str | Path) -> DebFile:
    try:
        return DebFile(str(deb))
    except (ArError, tarfile.TarError, EOFError) as problem:
        raise MalformedFileError(f"{deb}: not a Debian package ({problem}); delete it so that it is fetched again")


def package_info(deb: str | Path) -> dict[str, str]:
    """Name, version and sha256 of a .deb: what a corpus built from it records as its source."""
    with _open(deb) as package:
        control = package.debcontrol()
        return {"package": control["Package"], "version": control["Version"], "sha256": sha256(deb)}


def _member_path(name: str) -> str:
    """A member's path without the leading ``./`` that dpkg-deb writes."""
    return str(PurePosixPath(name.removeprefix("./")))


def package_members(deb: str | Path, pattern: str = "*") -> Iterator[tuple[str, bytes]]:
    """(path, content) of the package's regular files whose path (``usr/share/...``) matches the glob
    ``pattern``, in archive order; links are skipped (man page aliases would repeat their target's text)."""
    with _open(deb) as package:
        try:
            archive = package.data.tgz()
            for member in archive:
                path = _member_path(member.name)
                if member.isfile() and fnmatch(path, pattern):
                    yield path, archive.extractfile(member).read()
        except (tarfile.TarError, EOFError, OSError) as problem:
            raise MalformedFileError(f"{deb}: damaged package data ({problem}); delete it so that it is fetched "
                                     f"again") from None


def extract(deb: str | Path, prefix: str, directory: str | Path) -> list[Path]:
    """Write the package's files under ``prefix`` (e.g. ``usr/share/sword``) into ``directory``, keeping
    their paths relative to ``prefix``: for readers that need files on disk (pysword)."""
    written = []
    root = Path(directory)
    for path, content in package_members(deb, f"{prefix.rstrip('/')}/*"):
        relative = PurePosixPath(path).relative_to(prefix)
        if ".." in relative.parts:
            raise MalformedFileError(f"{deb}: member {path} points outside its directory")
        target = root.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        written.append(target)
    return written

