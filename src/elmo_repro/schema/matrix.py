"""The params sections of the run matrix: named ELMo specs (``elmo_specs``), the table specs that
request runs (``tables``, one model per table) and the sections rendered from them (``runs``,
``elmo_features``, ``finetune_tasks``; :mod:`elmo_repro.experiments.specs`)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, create_model, model_validator

from ..experiments.specs import BILMS, JOBS, NO_ELMO, ElmoSpec, RunSpec, TableRuns
from ..experiments.strict import Strict
from ..experiments.tasks import TASKS

REFRESH = "python -m workflow.profile --refresh"


def _spec_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name == NO_ELMO:
        raise ValueError(f"not a valid ELMo spec name: use letters, digits and _ (it goes into run ids), "
                         f"not {NO_ELMO!r}")
    return name


ElmoSpecsSection = dict[Annotated[str, AfterValidator(_spec_name)], ElmoSpec]


class ElmoFeaturesEntry(Strict):                         # rendered from the runs (workflow.profile)
    task: str
    bilm: Literal[BILMS]
    model: str                                           # the biLM's directory
    data: str                                            # the task's prepared examples
    out: str                                             # the cached layers


class FinetuneTaskEntry(Strict):                         # rendered from the runs (workflow.profile)
    data: str
    out: str                                             # the fine-tuned biLM's directory


Job = Literal[JOBS]
ElmoFeaturesSection = dict[Job, dict[str, ElmoFeaturesEntry]]
FinetuneTasksSection = dict[Job, dict[str, FinetuneTaskEntry]]
RunsSection = dict[Job, dict[str, dict[str, RunSpec]]]   # {job: {family: {run id: run spec}}}, rendered


class TableSpec(Strict):
    runs: TableRuns                                      # the runs the table reads

    @model_validator(mode="after")
    def _check(self) -> "TableSpec":
        for task in self.runs.tasks:
            if task not in TASKS:
                raise ValueError(f"runs.tasks: unknown task {task!r}; known: {', '.join(TASKS)}")
        return self


class Table1Spec(TableSpec):
    """The paper's Table 1 (main job): baseline and ``elmo`` runs; the ``control`` column (an ELMo
    spec, or null for none) is filled by the runs of ``tables.table1_controls`` (analysis job)."""

    elmo: str                                            # the +ELMo column's spec
    control: str | None                                  # the char-layer control's spec; null = none

    @model_validator(mode="after")
    def _listed(self) -> "Table1Spec":
        for key in ("elmo", "control"):
            if getattr(self, key) == NO_ELMO:
                raise ValueError(f"{key}: must name an ELMo spec, not {NO_ELMO!r}")
        if self.elmo not in self.runs.elmo:
            raise ValueError(f"elmo: {self.elmo!r} is not listed in runs.elmo")
        return self


class FinetuningTableSpec(Strict):
    """The fine-tuning table: per task the dev text's perplexity under the base and the fine-tuned
    biLM; with ``runs``, also the task metric of ``finetuned`` against ``base`` (two ELMo specs
    that differ in ``bilm``)."""

    runs: TableRuns | None = None
    finetuned: str | None = None
    base: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "FinetuningTableSpec":
        if (self.runs is None) != (self.finetuned is None) or (self.runs is None) != (self.base is None):
            raise ValueError("runs, finetuned and base: give all three (the comparison) or none (perplexities only)")
        if self.runs is not None:
            for key in ("finetuned", "base"):
                if getattr(self, key) not in self.runs.elmo:
                    raise ValueError(f"{key}: {getattr(self, key)!r} is not listed in runs.elmo")
        return self


class Figure2Spec(TableSpec):
    """Figure 2 (§5.5): the learned layer weights of ELMo runs; every listed spec must learn a mix."""

    @model_validator(mode="after")
    def _learned(self) -> "Figure2Spec":
        if NO_ELMO in self.runs.elmo:
            raise ValueError(f"runs.elmo: {NO_ELMO!r} runs have no layer weights to show")
        return self


class AblationTableSpec(TableSpec):
    """An ablation table of the paper (Tables 2, 3 and 7): one column per ELMo spec of ``runs.elmo``
    (``baseline`` included), labelled by the paper's column (``columns``: spec -> its column in
    ``paper``, a CSV under ``paper/``), dev and test metrics, and a paired bootstrap for each pair
    of ``compare`` ([other, treatment]), Holm-corrected over the table."""

    paper: str
    columns: dict[str, str]
    compare: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(min_length=1)   # [other, treatment]

    @model_validator(mode="after")
    def _columns(self) -> "AblationTableSpec":
        if set(self.columns) != set(self.runs.elmo):
            raise ValueError(f"columns: name exactly the specs of runs.elmo ({', '.join(self.runs.elmo)})")
        for i, pair in enumerate(self.compare):
            for name in pair:
                if name not in self.runs.elmo:
                    raise ValueError(f"compare[{i}]: {name!r} is not listed in runs.elmo")
        return self


# One model per table that requests runs; the tables of the probes and CoVe request none.
TABLE_SCHEMAS: dict[str, type] = {"table1": Table1Spec, "table1_controls": TableSpec,
                                  "finetuning": FinetuningTableSpec, "figure2": Figure2Spec,
                                  "table2": AblationTableSpec, "table3": AblationTableSpec,
                                  "table7": AblationTableSpec,
                                  "figure1": TableSpec}
TablesSection = create_model("TablesSection", __base__=Strict,   # every table is optional
                             **{table: (schema, None) for table, schema in TABLE_SCHEMAS.items()})
