"""PEFT-IR Repro: reusable code behind the Snakemake workflow.

``layout`` is the contract with the workflow (artefact paths, names, what each job gets); the
subpackages hold one concern each: ``data``, ``retrieval`` (first stage), ``rankers``,
``methods`` (PEFT), ``training``, ``evaluation``, ``reports``, ``provenance`` and ``workflow``
(running jobs). Each rule's script calls one function of them.
"""

__version__ = "0.1.0"
