"""The shared contract between the Snakemake workflow and the package: where shared artefacts live (``paths``),
what a wildcard may be and how a path is matched back to its artefact (``wildcards``), metric names
(``measures``), what every system's jobs get from the config alike (``params``) and the layout of a retrieval table
(``retrieval``). Standard library and ir_measures only: the Snakefile plans from it without importing torch."""
