"""What a cluster sees (docs/running.md): a training job alone, the jobs that read only its weights in one
allocation, the Semi-Siamese rerankings ten to an allocation; planned by a dry run under the checkout's SLURM
profile (peftir.pipeline.cost). A rule that loses its group or joins the wrong one, or a grouped rule without the
group's slot, fails here without a cluster; tests/test_slurm.py submits groups for real."""
import math
from collections import Counter, defaultdict

import pytest
import yaml

from peftir.pipeline import cost

from checkout import REPO

TRAININGS = {"train", "train_first_stage", "train_retriever", "train_splade", "train_splade_reranker",
             "ranking_adapter", "mlm_language_adapter", "pretrain"}
CONSUMERS = {"rerank", "dense_index", "dense_search", "splade_index", "splade_search", "splade_rerank", "rerank_clir"}
BUNDLE = 10          # slurm/config.yaml: group-components semi_siamese_rerank=10


@pytest.fixture(scope="module")
def planned() -> list[cost.PlannedJob]:
    return cost.planned_jobs(REPO / "Snakefile", [REPO / "config.yaml"], ["all_tables"])


def _submissions(jobs: list[cost.PlannedJob]) -> dict[int, list[cost.PlannedJob]]:
    found = defaultdict(list)
    for job in jobs:
        if job.group:
            found[job.submission].append(job)
    return found


def _rules(members: list[cost.PlannedJob]) -> Counter:
    return Counter(job.rule for job in members)


def test_a_training_is_alone_and_the_jobs_reading_its_weights_share_one_allocation(planned):
    assert not any(job.group for job in planned if job.rule in TRAININGS)
    assert all(job.group for job in planned if job.rule in CONSUMERS)
    submissions = _submissions(planned)
    reranks = sum(job.rule == "rerank" for job in planned)
    bundles = [members for members in submissions.values() if "rerank" in _rules(members)]
    assert len(bundles) == math.ceil(reranks / BUNDLE) and all(_rules(m) == {"rerank": len(m)} for m in bundles)
    assert max(map(len, bundles)) == min(reranks, BUNDLE)
    dense = [m for m in submissions.values() if any(job.rule.startswith("dense_index") for job in m)]
    assert len(dense) == sum(job.rule in ("dense_index", "dense_index_untrained") for job in planned)
    for members in dense:        # one retriever's (or untrained backbone's) index with every search of it
        assert _rules(members)["dense_index"] + _rules(members)["dense_index_untrained"] == 1
        index = next(job for job in members if job.rule.startswith("dense_index")).wildcards
        assert all(job.wildcards.get(key) == value for job in members for key, value in index.items())
    searches = [job for job in planned if job.rule in ("dense_search", "dense_search_untrained")]
    assert sum(len(m) for m in dense) >= len(dense) + len(searches)
    splade = [m for m in submissions.values() if "splade_index" in _rules(m)]
    assert all(_rules(m) == {"splade_index": 1, "splade_search": 1} for m in splade)
    assert all(len({job.wildcards["target"] for job in m}) == 1 for m in splade)
    assert len(splade) == sum(job.rule == "splade_index" for job in planned)
    for rule, keys in (("splade_rerank", ("dataset", "reranker", "fold", "seed")), ("rerank_clir", ("ranking", "seed"))):
        runs = Counter(tuple(job.wildcards[key] for key in keys) for job in planned if job.rule == rule)
        grouped = [m for m in submissions.values() if rule in _rules(m)]
        assert sorted(len(m) for m in grouped) == sorted(runs.values()) and len(grouped) == len(runs) > 0
        assert all(len({tuple(job.wildcards[key] for key in keys) for job in m}) == 1 for m in grouped)


def test_allocations_are_the_group_submissions_and_the_jobs_left_alone(planned):
    local = cost.local_rules(REPO)
    assert {"evaluate", "evaluate_dense", "evaluate_splade", "evaluate_clir", "table", "scorecard", "download",
            "export_answers", "teacher_scores"} <= local
    zeros = [0.0] * len(planned)
    allocations = cost.allocations(planned, local, zeros, zeros, None)
    alone = [job for job in planned if job.group is None and job.rule not in local]
    assert allocations.count == len(_submissions(planned)) + len(alone)
    assert allocations.alone == len(planned) - allocations.local_jobs > allocations.count
    assert not any(job.rule.startswith(("evaluate", "table", "scorecard", "significance")) for job in alone)
    bundle = next(kind for kind in allocations.kinds if kind.rules == ("rerank",))
    assert bundle.runtime == BUNDLE * 30 and bundle.gpu == 1 and bundle.mem_mb == 4000   # config.yaml: summed, max


def test_a_grouped_job_without_the_slot_is_refused():
    jobs = [cost.PlannedJob("rerank", {}, {"gpu": "1", "slot": "1"}, "semi_siamese_rerank", 1),
            cost.PlannedJob("rerank", {}, {"gpu": "1"}, "semi_siamese_rerank", 1)]
    with pytest.raises(ValueError, match="rule rerank is in group semi_siamese_rerank without the group's slot"):
        cost.allocations(jobs, set(), [0.0, 0.0], [0.0, 0.0], None)


def test_groups_off_gives_one_allocation_per_job_and_cpu_work_asks_no_gpu(tmp_path):
    overlay = tmp_path / "alone.yaml"
    overlay.write_text(yaml.safe_dump({"execution": {"groups": False},
                                       "resources": {"prerank_clir": {"threads": 1, "mem_mb": 2000, "runtime": 30,
                                                                      "gpu": 1}}}))
    jobs = cost.planned_jobs(REPO / "Snakefile", [REPO / "config.yaml", overlay], ["all_tables"])
    assert not any(job.group for job in jobs)
    zeros = [0.0] * len(jobs)
    allocations = cost.allocations(jobs, cost.local_rules(REPO), zeros, zeros, None)
    assert allocations.count == allocations.alone
    preranks = {job.wildcards["prerank"]: int(job.resources["gpu"]) for job in jobs if job.rule == "prerank_clir"}
    assert preranks["dense"] == 1 and preranks["bm25"] == 0
    mining = [(job.wildcards["negatives"], int(job.resources["gpu"])) for job in jobs if job.rule == "mine_negatives"]
    assert mining and all(gpu == (negatives == "denoised") for negatives, gpu in mining), mining
