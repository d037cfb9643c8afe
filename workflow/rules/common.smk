# The configuration, its validation and the helpers rules share. What they compute lives in the
# package: peftir.pipeline.contract (artefact paths, wildcards and what each job gets from the config, the core's
# and each registered system's joined) and each system's plan, which its rules file imports.
import os
import re

from peftir.contract import inputs
from peftir.pipeline.bundles import BUNDLES
from peftir.pipeline.contract import PARAMS, PATHS
from peftir.pipeline.contract import wildcard_constraints as contract_constraints
from peftir.provenance.code_version import code_version
from peftir.provenance.records import CONFIGFILES_ENV, WORKFLOW_ENV, workflow_file
from peftir.pipeline import plan, warm
from peftir.pipeline.config import ConfigError, validate
from peftir.pipeline.landing_page import LandingPage
from peftir.systems import in_run, packages

# Jobs record the workflow's checkout and the run's config files (peftir.provenance.records).
CONFIGFILES = [os.path.abspath(path) for path in workflow.config_settings.configfiles]

try:
    validate(config, workflow.source_path("../schemas/config.schema.yaml"), workflow.basedir, CONFIGFILES or None)
except ConfigError as problem:
    raise WorkflowError(f"Invalid configuration: {problem}")
SCRIPTS = os.path.join(workflow.basedir, "workflow", "scripts")
os.environ[WORKFLOW_ENV] = workflow.basedir
os.environ[CONFIGFILES_ENV] = os.pathsep.join(CONFIGFILES)
# Jobs' logs are files: tqdm's redrawn bars are off in them; peftir.progress_log writes how far a job is as lines.
os.environ.setdefault("TQDM_DISABLE", "1")

SYSTEMS = in_run(config)  # the registered systems this config has (peftir.systems): their rules files are included
PACKAGES = packages()  # peftir and the registered systems' packages: what a job's code version follows
REPORTS = plan.report_files(config)
config["_report"] = LandingPage(
    workflow.basedir,
    CONFIGFILES or ["config.yaml"],
    {name: path for name, path in REPORTS.items() if path.endswith(".tex")},
    config,
)


wildcard_constraints:
    **contract_constraints(),


def param_of(*concerns):
    """One param holding several concerns' params by name: a bundle (peftir.pipeline.bundles.BUNDLES), the one param
    the variants of a base rule replace when they use other concerns (a variant's params replace the base's by name
    and keep the others)."""
    return lambda wildcards: {name: PARAMS[name](config, dict(wildcards.items())) for name in concerns}


def params_of(script, *concerns, **bundles):
    """A rule's params: one per config concern its jobs use (peftir.pipeline.contract.PARAMS), bundles of concerns
    under one name (`param_of`), and `code`, the code behind `workflow/scripts/<script>.py` (or the absolute path of
    a script an installed system ships, without `.py`) by content (peftir.provenance.code_version): a job reruns when
    that code changes and not when a comment, a docstring or the provenance code does."""
    path = os.path.join(SCRIPTS, f"{script}.py")
    unknown = sorted(set(bundles) - set(BUNDLES))
    if unknown:
        raise WorkflowError(f"params_of({script!r}): {unknown} not among the bundles {BUNDLES}")
    single = {name: (lambda wildcards, name=name: PARAMS[name](config, dict(wildcards.items()))) for name in concerns}
    joined = {name: param_of(*names) for name, names in bundles.items()}
    return {**single, **joined, "code": lambda wildcards: code_version(path, workflow.basedir, PACKAGES)}


def reported_of(files):
    """The papers' reported files (``files``: a function of the wildcards giving their paths relative to the
    checkout) as a param, each by content (peftir.provenance.records.workflow_file): shipped with the workflow like
    its code, they are read from the checkout wherever the jobs run, and a changed number reruns what shows it."""
    return lambda wildcards: [workflow_file(path, workflow.basedir) for path in files(wildcards)]


def threads_of(rule):
    return lambda wildcards: plan.resources(config, rule, dict(wildcards.items()))["threads"]


def resources_of(rule, grouped=False, needs_gpu=None):
    """Memory, runtime (minutes), GPUs and, where configured, the GPU model of one job of a rule. A job of a grouped
    rule (``run_group``, ``bundle_group``) also holds one ``slot``, scoped to each allocation (below), of which the
    SLURM profile allows one: Snakemake then sizes a group as its largest job for the sum of their runtimes, where
    it would add up the asks of jobs it could run side by side (in the allocation the plugin runs them one at a
    time). ``needs_gpu``, a function of the wildcards, leaves the GPU out of the jobs of a GPU rule that run no
    model."""
    keys = ["mem_mb", "runtime", "gpu"] + ["gpu_model"] * ("gpu_model" in config["resources"][rule])

    def asked(wildcards, key):
        value = plan.resources(config, rule, dict(wildcards.items()))[key]
        if key in ("gpu", "gpu_model") and needs_gpu is not None and not needs_gpu(dict(wildcards.items())):
            return 0 if key == "gpu" else ""
        return value

    slot = {"slot": 1} if grouped else {}
    return {key: (lambda wildcards, key=key: asked(wildcards, key)) for key in keys} | slot


def groups_on():
    """Whether a cluster run groups jobs (``execution.groups``, true by default; docs/running.md)."""
    return config["execution"].get("groups", True)


def run_group(system, run):
    """The group of the jobs that read one training run's weights and feed one another (an index and every search
    of it; ``run``: the pattern of the run's wildcards, as its contract names them): one allocation on a cluster
    (docs/running.md). The training itself stays alone: Snakemake reruns a failed group whole, and a finished
    training must not be redone because a search after it failed. A variant's job without the run's wildcards (an
    untrained backbone's) shares one only with the jobs it feeds that have the same wildcards. None when
    ``execution.groups`` is false (true by default)."""
    if not groups_on():
        return None
    names = re.findall(r"{(\w+)", run)

    def group(wildcards):
        values = dict(wildcards.items())
        key = [values[name] for name in names] if set(names) <= set(values) else [*values.values(), "alone"]
        return ".".join([system, *(re.sub(r"[^\w+-]", "_", value) for value in key)])

    return group


def bundle_group(name):
    """The group of jobs that each read one run's weights and feed no other job (rerankings): ``name``, with the
    run's wildcards in it where the jobs of one run are to share an allocation, without where any may; the SLURM
    profile's ``group-components`` puts that many jobs of one name into one allocation (``slurm/config.yaml``).
    None when ``execution.groups`` is false."""
    return name if groups_on() else None


resource_scopes:
    slot="local",


onstart:
    if warm.wanted(
        config["execution"]["warm_worker"],
        local_run=workflow.local_exec and not workflow.remote_exec,
        deployed=bool(workflow.deployment_settings.deployment_method),
    ):
        warm.start(SCRIPTS)
