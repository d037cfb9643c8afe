"""A warm worker: one process with the jobs' imports done, forking a child per job script.

Importing torch and transformers costs about 5 s per process, which dominates a local DAG of
hundreds of small jobs. The Snakefile's ``onstart`` hook starts this worker (``start``) for local
runs (``execution.warm_worker: auto``), also for the jobs a cluster run keeps local when asked
(``true``), never with ``false`` or when jobs run in a conda env or container.

It runs whole scripts, not functions: a job's script calls ``run_in_worker()`` first (through
``peftir.pipeline.job``). Where a worker serves this run and the script's process descends from
the Snakemake process that started it, the script file Snakemake wrote (with the job's
``snakemake`` object inside), its working directory, environment and standard streams go to the
worker; the worker forks, the child runs that same script, in which ``run_in_worker()`` returns at
once, and the script's process exits with the child's status. What runs is therefore the same
script, the same package function and the same log and provenance code, with or without a worker.

The socket lives in a private temporary directory (mode 0700), the worker serves only its own
user and only Snakemake's copies of the workflow's own scripts (a file under the client's
``.snakemake/scripts`` named ``*.<script>.py`` that ends with that script's text, as read when the
worker started: Snakemake writes its preamble, then the script); anything else runs in the client's
own process. A child whose
client disconnects (the job was cancelled) is killed; the worker exits with Snakemake, and the
directory goes with it.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ADDRESS_ENV = "PEFTIR_WARM_WORKER"    # the worker's socket
OWNER_ENV = "PEFTIR_WARM_OWNER"       # pid of the Snakemake process that started it
DIRECTORY_PREFIX = "peftir-warm-"     # the socket's private temporary directory
# What a script's preamble and its job context import, beside what it runs (``code_version.modules``).
PRELOAD = ("snakemake.iocontainers", "snakemake.logging", "peftir.pipeline.job")
_serving = False                      # True in a worker's child: the script runs here


def wanted(setting: bool | str, local_run: bool, deployed: bool) -> bool:
    """Whether to start a worker: ``auto`` for local runs only, ``True`` also for a cluster run's local
    jobs (remote jobs never reach it), ``False`` never; not when jobs run in a conda env or container."""
    if deployed or setting is False:
        return False
    return setting is True or local_run


def start(scripts: str | Path) -> str:
    """Start a worker for the scripts in ``scripts`` (each one's imports done at its first job); returns its
    socket's path.

    Its address reaches jobs through the environment, which Snakemake's job processes inherit.
    """
    directory = tempfile.mkdtemp(prefix=DIRECTORY_PREFIX)
    address = os.path.join(directory, "worker.sock")
    process = subprocess.Popen([sys.executable, "-m", __name__, address, str(os.getpid()), str(scripts)],
                               stdin=subprocess.DEVNULL)

    def stop() -> None:
        process.kill()
        process.wait()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(stop)
    os.environ[ADDRESS_ENV], os.environ[OWNER_ENV] = address, str(os.getpid())
    return address


def run_in_worker() -> None:
    """Have the warm worker run this script and exit with its status; return if this process is to run it."""
    if _serving:
        return
    address, owner = os.environ.get(ADDRESS_ENV), os.environ.get(OWNER_ENV, "")
    if not address or not os.path.exists(address) or not owner.isdigit() or not _descends_from(int(owner)):
        return
    try:
        status = _submit(address, os.path.abspath(sys.argv[0]))
    except (ConnectionRefusedError, FileNotFoundError):
        return  # the worker is gone: run here
    if status is not None:
        sys.exit(status)


def serving() -> bool:
    """Whether this process is a worker's child running a job's script."""
    return _serving


def _submit(address: str, script: str) -> int | None:
    """The exit status of the script run by the worker; None if the worker refused it (run it here)."""
    request = json.dumps({"script": script, "cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv})
    sys.stdout.flush(), sys.stderr.flush()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(address)
        socket.send_fds(conn, [b"\0"], [0, 1, 2])       # the child writes where this process would
        conn.sendall(request.encode() + b"\n")
        reply = conn.makefile().readline()
    return int(json.loads(reply)["status"]) if reply else None


def _descends_from(ancestor: int) -> bool:
    """Whether this process descends from ``ancestor`` (a job of a local run, not one on a cluster node)."""
    pid = os.getpid()
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _exit_status(stop: SystemExit) -> int:
    """What Python itself makes of ``sys.exit(code)``: a message is printed and gives status 1."""
    if stop.code is None or isinstance(stop.code, int):
        return stop.code or 0
    print(stop.code, file=sys.stderr)
    return 1


def _child(request: dict, fds: list[int]) -> int:
    """Body of a forked child: become the client's process (streams, directory, environment), run its script."""
    global _serving
    _serving = True
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    del os.environ[ADDRESS_ENV]       # this process runs the script: nothing in it may ask a worker again
    sys.argv = request["argv"]
    try:
        runpy.run_path(request["script"], run_name="__main__")
        status = 0
    except SystemExit as stop:
        status = _exit_status(stop)
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush(), sys.stderr.flush()
    return status


def _script_name(copy: Path) -> str:
    """The workflow script a copy Snakemake wrote is of: ``tmpab12cd.train.py`` → ``train.py``."""
    return copy.name.split(".", 1)[-1]


def _prepare(script: Path, prepared: set[str]) -> None:
    """Import the package modules ``script`` runs (``code_version.modules``), once per script, before its
    first job forks; then move every object made so far to a permanent generation, so that a child's
    garbage collections neither walk them nor write to their pages, which stay shared with this process
    (Python's advice for processes that fork without exec)."""
    from ..provenance.code_version import modules

    if script.name in prepared:
        return
    prepared.add(script.name)
    # A module that fails to import must not take the worker down with the other jobs it is running: the
    # job's child imports it again and fails with the traceback in the job's own log, as it would alone.
    with contextlib.suppress(Exception):
        for module in modules(str(script)):
            importlib.import_module(module)
    gc.collect()
    gc.freeze()


def _registered(script: Path, registered: dict[str, str]) -> bool:
    """Whether ``script`` is Snakemake's copy of one of the workflow's scripts (``registered``: name → text)."""
    name = _script_name(script)
    try:
        return name in registered and script.read_text().endswith(registered[name])
    except OSError:
        return False


def _accepted(conn: socket.socket, registered: dict[str, str]) -> tuple[dict, list[int]] | None:
    """The request of a client of this user for a copy of one of the workflow's scripts, with its descriptors."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
    request = json.loads(conn.makefile().readline())
    uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
    copies = Path(request["cwd"]).resolve() / ".snakemake" / "scripts"
    script = Path(request["script"]).resolve()
    if uid != os.getuid() or len(fds) != 3 or script.parent != copies or not _registered(script, registered):
        for fd in fds:
            os.close(fd)
        return None
    return request, fds


def serve(address: str, owner: int, scripts: str) -> None:
    """Accept scripts on the Unix socket ``address`` until ``owner`` exits.

    The socket appears as soon as the jobs' common imports are done. A script's own imports are done
    here when its first job arrives (``_prepare``), so a run imports what its scripts run and no
    more: a run of one system never imports another's modules, and a run of a few jobs pays for a few
    scripts' imports, not for every script of the workflow.
    """
    from ..provenance import records

    registered = {path.name: path.read_text() for path in Path(scripts).glob("*.py")}
    for module in PRELOAD:
        importlib.import_module(module)
    records.versions()            # the same for every job of the run: found once, inherited by each child
    prepared: set[str] = set()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running: dict[int, socket.socket] = {}
    try:
        while _alive(owner):
            for key, _ in selector.select(timeout=0.2):
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    accepted = _accepted(conn, registered)
                    if accepted is None:
                        conn.close()
                        continue
                    request, fds = accepted
                    _prepare(Path(scripts) / _script_name(Path(request["script"])), prepared)
                    pid = os.fork()
                    if pid == 0:  # the child must never return into this loop
                        status = 1
                        try:
                            listener.close()
                            status = _child(request, fds)
                        finally:
                            os._exit(status)
                    for fd in fds:
                        os.close(fd)
                    running[pid] = conn
                    selector.register(conn, selectors.EVENT_READ, pid)
                elif not key.fileobj.recv(1):  # client hung up: the job was cancelled
                    _kill(key.data)
            _reap(running, selector)
    finally:
        for pid in list(running):
            _kill(pid)
        os.unlink(address)
        if Path(address).parent.name.startswith(DIRECTORY_PREFIX):   # also when Snakemake was killed
            shutil.rmtree(Path(address).parent, ignore_errors=True)


def _reap(running: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    """Report finished children's exit statuses to their clients."""
    while running:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        conn = running.pop(pid)
        selector.unregister(conn)
        try:
            conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        except OSError:
            pass
        conn.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


if __name__ == "__main__":   # run as the package's module, so its children share ``_serving`` with the scripts
    from peftir.pipeline import warm

    warm.serve(sys.argv[1], int(sys.argv[2]), sys.argv[3])
