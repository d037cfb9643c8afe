"""PEFT-IR Repro: reusable code behind the Snakemake workflow.

The subpackages stand in floors: a core every system stands on (``contract``, ``data``, ``execution``,
``evaluation``, ``provenance``, ``retrieval``, ``reports``), shared model machinery (``models``, ``training``), one
subpackage per system (``semi_siamese``, ``splade``, ``clir``, ``dense``: each with its contract, plan, config checks
and relations) and the application (``pipeline``, ``app``). The floors are written down in the manual
(Development, "Floors") and held by ``tests/test_floors.py``. Each rule's script calls one function of them.
"""

__version__ = "0.1.0"
