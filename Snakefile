# The same DAG as dvc.yaml, for clusters: every rule is generated from workflow/registry.py, the
# single source of truth, so the two cannot drift (tests/workflow/test_snakemake.py compares them).
# A run family (train_<task>, train_<task>_elmo) becomes one rule per run in params.yaml's `runs`,
# named <family>@<run id> like DVC's foreach stages, so adding a seed adds one job.
#   snakemake --cores 2            # run the main job (params.yaml's profile), as `dvc repro`
#   snakemake --cores 2 analysis   # run the analysis job, as `dvc repro analysis/dvc.yaml`
#   snakemake -n --forceall        # list every job of the main job
#   snakemake --profile workflow/profiles/slurm   # on a SLURM cluster (resources from the registry)
# DVC-only features: persistent outputs (biLM checkpoints) are not declared here; the pretraining
# stage resumes from models/bilm_checkpoints by itself either way. The outputs git tracks are
# update(): a failing job leaves the committed ones as they were (DVC: persist).
from elmo_repro.params import lookup
from workflow.snakemake_dag import Outputs, expand, is_directory, snakemake_inputs
from workflow.stage import PARAMS_CHECK

configfile: "params.yaml"

STAGES = expand(config)
OUTPUTS = Outputs(STAGES)   # built once: the paper profile has hundreds of stages

def job_outputs(job):
    return [out for stage in STAGES if stage.job == job for out in stage.all_outs if out not in stage.persist]


def outputs(stage):
    """The stage's outputs as Snakemake's: directories flagged, and update() on the files git
    tracks (Stage.kept): Snakemake otherwise deletes outputs before a job and after a failed one;
    these are backed up and restored if the job fails."""
    def flagged(out):
        out = directory(out) if is_directory(out) else out
        return update(out) if out in stage.kept else out
    return [flagged(out) for out in stage.all_outs if out not in stage.persist]


rule all:   # the main job (dvc.yaml)
    default_target: True
    input: job_outputs("main")


rule analysis:   # the analysis job (analysis/dvc.yaml): `snakemake --cores 2 analysis`
    input: job_outputs("analysis")


for stage in STAGES:

    rule:
        name: stage.name
        # ancient(): the params check's report is rewritten on every params edit but never changes,
        # so its new mtime must not re-run everything (DVC compares its hash instead)
        input: [ancient(i) if i == PARAMS_CHECK else i for i in snakemake_inputs(stage, STAGES, config, OUTPUTS)]
        output: outputs(stage)
        # the command is a param: a `shell:` expression is evaluated when the job runs, after the
        # loop has moved on, so `shell: stage.cmd` would run the last stage's command for every rule
        params: cmd=stage.cmd, values={name: config if name.endswith(":") else lookup(config, name) for name in stage.params}
        threads: stage.threads
        resources: **stage.resources
        shell: "{params.cmd}"
