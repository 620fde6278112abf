# The same DAG as dvc.yaml, for clusters: every rule is generated from workflow/registry.py, the
# single source of truth, so the two cannot drift (tests/workflow/test_snakemake.py compares them).
#   snakemake --cores 2            # run the pipeline (params.yaml's profile)
#   snakemake -n --forceall        # list every job
#   snakemake --profile workflow/profiles/slurm   # on a SLURM cluster (resources from the registry)
# DVC-only features: persistent outputs (biLM checkpoints) are not declared here; the pretraining
# stage resumes from models/bilm_checkpoints by itself either way.
from workflow.registry import STAGES, snakemake_inputs

configfile: "params.yaml"

rule all:
    default_target: True
    input:
        [out for stage in STAGES for out in [*stage.outs, *stage.committed]]
        + [m for stage in STAGES for m in stage.metrics],


for stage in STAGES:

    rule:
        name: stage.name
        input: snakemake_inputs(stage, config)
        output: [directory(out) for out in [*stage.outs, *stage.committed]] + stage.metrics
        # the command is a param: a `shell:` expression is evaluated when the job runs, after the
        # loop has moved on, so `shell: stage.cmd` would run the last stage's command for every rule
        params: cmd=stage.cmd, **{section: config.get(section) for section in stage.params}
        threads: stage.threads
        resources: **stage.resources
        shell: "{params.cmd}"
