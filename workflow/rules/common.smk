# The configuration, its validation and the helpers rules share. What they compute lives in the
# package: peftir.layout (artefact paths, names, what each job gets from the config) and
# peftir.workflow.plan (which files a job reads, what it asks for).
import os

from peftir.layout import CLIR_RUN, PARAMS, PATHS, RETRIEVER, RUN, FIRST_STAGE, SPLADE, SPLADE_TARGET, UNTRAINED
from peftir.layout import RERANKED, RERANKER
from peftir.layout import pair_languages
from peftir.layout import wildcard_constraints as layout_constraints
from peftir.provenance.code_version import code_version
from peftir.provenance.records import CONFIGFILES_ENV, WORKFLOW_ENV
from peftir.workflow import plan, warm
from peftir.workflow.config import ConfigError, validate
from peftir.workflow.report import LandingPage

try:
    validate(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as problem:
    raise WorkflowError(f"Invalid configuration: {problem}")

# Jobs record the workflow's checkout and the run's config files (peftir.provenance.records).
CONFIGFILES = [os.path.abspath(path) for path in workflow.config_settings.configfiles]
SCRIPTS = os.path.join(workflow.basedir, "workflow", "scripts")
os.environ[WORKFLOW_ENV] = workflow.basedir
os.environ[CONFIGFILES_ENV] = os.pathsep.join(CONFIGFILES)

DATASETS = plan.datasets(config)
TABLES = plan.reports(config, "tables")
FIGURES = plan.reports(config, "figures")
CLIR_TABLES = plan.clir_reports(config, "tables")
CLIR_FIGURES = plan.clir_reports(config, "figures")
DENSE_TABLES = [tuple(name.split("/")) for name in plan.dense_report_names(config)]
SPLADE_TABLES = plan.splade_report_names(config)
config["_report"] = LandingPage(workflow.basedir, CONFIGFILES or ["config.yaml"], TABLES, config)


wildcard_constraints:
    **layout_constraints(),


def params_of(*concerns):
    """One param per concern a rule's jobs use, from the config (peftir.layout.PARAMS)."""
    return {
        name: (lambda wildcards, name=name: PARAMS[name](config, dict(wildcards.items())))
        for name in concerns
    }


def code_of(script):
    """The code behind a script, by content (peftir.provenance.code_version), as a param: a job reruns
    when that code changes and not when a comment, a docstring or the provenance code does."""
    path = os.path.join(SCRIPTS, f"{script}.py")
    return lambda wildcards: code_version(path, workflow.basedir)


def threads_of(rule):
    return lambda wildcards: plan.resources(config, rule, dict(wildcards.items()))["threads"]


def resources_of(rule):
    """Memory, runtime (minutes), GPUs and, where configured, the GPU model of one job of a rule."""
    keys = ["mem_mb", "runtime", "gpu"] + ["gpu_model"] * ("gpu_model" in config["resources"][rule])
    return {
        key: (lambda wildcards, key=key: plan.resources(config, rule, dict(wildcards.items()))[key])
        for key in keys
    }


onstart:
    if warm.wanted(
        config["execution"]["warm_worker"],
        local_run=workflow.local_exec and not workflow.remote_exec,
        deployed=bool(workflow.deployment_settings.deployment_method),
    ):
        warm.start(SCRIPTS)
