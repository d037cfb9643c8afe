"""A warm worker: one process with the heavy imports done, forking a child per job.

Started by the Snakefile's ``onstart`` hook for local runs only (see
``workflow/rules/common.smk``); clients are ``peftir.runner.run``. The loop is
single-threaded (selectors), so forking never copies a process with other
threads. A child whose client disconnects (the job was cancelled) is killed;
the worker exits when the Snakemake process that started it is gone.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys

from .runner import Job, execute

PRELOAD = ("peftir.jobs.collection", "peftir.jobs.folding", "peftir.jobs.retrieval", "peftir.jobs.evaluation", "peftir.jobs.ranking", "peftir.jobs.reports")


def child(request: dict) -> int:
    """Body of a forked child: run the job, return its exit status."""
    os.chdir(request["cwd"])
    return execute(request["entry"], Job(**request["job"]))


def serve(address: str, parent: int) -> None:
    """Accept job requests on the Unix socket ``address`` until ``parent`` exits."""
    for module in PRELOAD:
        __import__(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(address):
        os.unlink(address)
    listener.bind(address)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running: dict[int, socket.socket] = {}
    try:
        while _alive(parent):
            for key, _ in selector.select(timeout=0.2):
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    request = json.loads(conn.makefile().readline())
                    pid = os.fork()
                    if pid == 0:  # the child must never return into this loop
                        status = 1
                        try:
                            listener.close()
                            status = child(request)
                        finally:
                            os._exit(status)
                    running[pid] = conn
                    selector.register(conn, selectors.EVENT_READ, pid)
                elif not key.fileobj.recv(1):  # client hung up: the job was cancelled
                    _kill(key.data)
            _reap(running, selector)
    finally:
        for pid in list(running):
            _kill(pid)
        os.unlink(address)


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


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
