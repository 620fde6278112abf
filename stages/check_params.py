"""Stage check_params: validate the whole params.yaml before any other stage starts.

Every stage depends on this stage's report, so ``dvc repro`` (and Snakemake) run it first: a typo,
a wrong type or a stale ``runs`` section fails here in about a second, naming the key path,
before DVC deletes the outputs of the stages the edit made stale. Every stage validates the file
again when it loads it. The report (``results/params_check.json``) is the same whatever the
values, so a valid edit re-runs only the stages that read the edited params.
"""

from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS: list[str] = []            # declared to DVC as the whole file (see workflow/registry.py)
REPORT = "results/params_check.json"


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()                     # raises InputError naming the key path
    with stage_run("check_params", params, SECTIONS):
        write_json(REPORT, {"valid": True})


if __name__ == "__main__":
    main()
