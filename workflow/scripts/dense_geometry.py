"""Rules `dense_geometry` and `dense_geometry_untrained`: Wang & Isola's alignment and uniformity of a retriever's
(or a backbone's untrained) [CLS] on its fold's test queries and their relevant passages (DPTDR Table 8)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.dense.representation_geometry import representation_geometry

    print(representation_geometry(smk.params.retriever, smk.params.dense_search, smk.input.index, smk.input.queries,
                                  smk.input.qrels, smk.input.folds, smk.wildcards.fold, smk.threads,
                                  smk.output.geometry, trained=smk.input.get("model")))
