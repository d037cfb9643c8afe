"""ir_metadata headers (Breuer et al., SIGIR 2022) for run files, as '#' comment lines.

Only what is the same for every rerun of the same job goes in (no host, no time), so a rerun with
the same seed writes a byte-identical run file; readers (``peftir.data.trec``) skip the lines.
"""
from __future__ import annotations

import json

from .records import git_state, versions, workflow_checkout


def ir_metadata(tag: str, method: dict, data: dict) -> list[str]:
    """Header lines for a run: software versions, the checkout's commit, the method and the data."""
    git = git_state(workflow_checkout())
    software = {name: version for name, version in versions().items() if version}
    lines = ["ir_metadata.start", f"tag: {tag}",
             "platform:", "  software:", "    libraries:"]
    lines += [f"      {name}: {json.dumps(version)}" for name, version in sorted(software.items())]
    lines += ["implementation:", "  source:", "    lang: python",
              "    repository: PEFT-IR Repro", f"    commit: {git['commit']}", f"    dirty: {json.dumps(git['dirty'])}",
              "method:"]
    lines += [f"  {key}: {json.dumps(value, sort_keys=True)}" for key, value in method.items()]
    lines += ["data:", "  test collection:"]
    lines += [f"    {key}: {json.dumps(value, sort_keys=True)}" for key, value in data.items()]
    lines.append("ir_metadata.end")
    return lines
