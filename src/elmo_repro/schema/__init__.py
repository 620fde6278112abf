"""The schema of ``params.yaml``: one strict pydantic model per section, and the rules across
sections.

An unknown key, a wrong type, an out-of-domain number, an unknown task, ELMo spec or placement,
or a ``runs`` section that no longer matches ``tables``/``elmo_specs`` fails at once, naming the
key path::

    params.yaml: tasks.ner.model.lstm_layer: unknown key; did you mean lstm_layers?

The sections live in :mod:`.sections` (data, biLM), :mod:`.probes` (CoVe, probes) and
:mod:`.matrix` (ELMo specs, tables, runs); a task's section is its declaration's ``config``
(:mod:`elmo_repro.experiments.tasks`); the wording of errors is :mod:`.errors`. The package
imports only pydantic, the standard library, :mod:`elmo_repro.io` and :mod:`elmo_repro.experiments`
(no torch, numpy or h5py), so a bad file fails in well under a second.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, create_model

from ..experiments.rendering import render_runs
from ..experiments.bilm_source import PRETRAINED_BILM, released_bilm
from ..experiments.specs import NO_ELMO, render_elmo_features, render_finetune_tasks
from ..experiments.strict import Strict
from ..experiments.tasks import TASKS
from .errors import problems_of, raise_problems, unknown_key
from .matrix import (REFRESH, TABLE_SCHEMAS, ElmoFeaturesSection, ElmoSpecsSection, FinetuneTasksSection,
                     RunsSection, TablesSection)
from .probes import CoveSection, ProbesSection
from .sections import (EVAL_SPLITS, HELDOUT_TEXTS, LM_SOURCES, BilmSection, BilmSourceSection, ComputeSection,
                       ContaminationSection, DataSection, FeaturesSection, FinetuneSection, LmDataSection,
                       PerplexitySection, PretrainSection, VocabSection, WordVectorsSection)

__all__ = ["EVAL_SPLITS", "HELDOUT_TEXTS", "LM_SOURCES", "SECTIONS", "TABLE_SCHEMAS", "TASK_SCHEMAS", "Params",
           "validate_params", "validate_section"]

TASK_SCHEMAS: dict[str, type[Strict]] = {name: task.config for name, task in TASKS.items()}
TasksSection = create_model("TasksSection", __base__=Strict,
                            **{task: (schema, ...) for task, schema in TASK_SCHEMAS.items()})


class Params(Strict):
    profile: str = Field(min_length=1)
    data: DataSection
    lm_data: LmDataSection
    contamination: ContaminationSection
    vocab: VocabSection
    bilm: BilmSection
    pretrain: PretrainSection
    finetune: FinetuneSection
    perplexity: PerplexitySection
    bilm_source: BilmSourceSection
    features: FeaturesSection
    compute: ComputeSection
    word_vectors: WordVectorsSection
    cove: CoveSection
    probes: ProbesSection
    tasks: TasksSection
    elmo_specs: ElmoSpecsSection
    tables: TablesSection
    runs: RunsSection
    elmo_features: ElmoFeaturesSection
    finetune_tasks: FinetuneTasksSection


SECTIONS = tuple(Params.model_fields)


def validate_params(params: Any, source: str | Path = "params.yaml") -> None:
    """Check a whole parameter mapping against the schema and the cross-section rules.

    Raises:
        InputError: naming ``source`` and, one line per problem, ``<key.path>: <problem>``.
    """
    problems = problems_of(Params, params, ())
    if not problems:
        problems = _cross_check(params)
    raise_problems(source, problems)


def validate_section(name: str, value: Any, source: str | Path = "params.yaml") -> None:
    """Check one section (its schema only; the cross-section rules need the whole file)."""
    if name not in Params.model_fields:
        raise_problems(source, [(name, unknown_key(name, list(SECTIONS), "section"))])
    field = Params.model_fields[name]
    annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    raise_problems(source, problems_of(annotation, value, (name,)))


def _cross_check(params: dict) -> list[tuple[str, str]]:
    """Rules across sections: tables name defined ELMo specs; ``runs`` is their rendering."""
    specs = params["elmo_specs"]
    problems = _probe_layer_problems(params)
    left_out = params["data"].get("left_out") or {}
    for i, split in enumerate(params["contamination"]["splits"]):
        if split in left_out:
            problems.append((f"contamination.splits[{i}]", f"{split!r} is left out (data.left_out: "
                             f"{left_out[split]}): no stage can read it"))
    for table, spec in params["tables"].items():
        for i, task in enumerate((spec.get("runs") or {}).get("tasks", [])):
            if task in left_out:
                problems.append((f"tables.{table}.runs.tasks[{i}]", f"{task!r} is left out (data.left_out: "
                                 f"{left_out[task]}): its data is not in the mirror"))
    for table, spec in params["tables"].items():
        for i, name in enumerate((spec.get("runs") or {}).get("elmo", [])):
            if name != NO_ELMO and name not in specs:
                close = difflib.get_close_matches(name, list(specs), n=1)
                hint = f"did you mean {close[0]}?" if close else f"defined: {', '.join([NO_ELMO, *specs])}"
                problems.append((f"tables.{table}.runs.elmo[{i}]", f"unknown ELMo spec {name!r}; {hint}"))
    problems += _released_problems(params)
    table1, controls = params["tables"].get("table1"), params["tables"].get("table1_controls")
    if table1 and table1.get("control") and controls and table1["control"] not in controls["runs"]["elmo"]:
        problems.append(("tables.table1.control", f"{table1['control']!r} is not listed in "
                         "tables.table1_controls.runs.elmo (the control column's runs)"))
    figure2 = params["tables"].get("figure2") or {}
    for i, name in enumerate((figure2.get("runs") or {}).get("elmo", [])):
        if name in specs and specs[name].get("mix", "learned") != "learned":
            problems.append((f"tables.figure2.runs.elmo[{i}]", f"{name!r} has mix {specs[name]['mix']!r}: "
                             "Figure 2 shows learned layer weights (mix: learned)"))
    if problems:
        return problems
    stale = _first_difference(params["runs"], render_runs(params["tables"], specs))
    if stale:
        return [("runs", f"out of date with tables/elmo_specs; re-render with `{REFRESH}` ({stale})")]
    rendered = {"elmo_features": render_elmo_features(params["runs"], params["bilm_source"]["path"]),
                "finetune_tasks": render_finetune_tasks(params["runs"])}
    return [(name, f"out of date with runs and bilm_source; re-render with `{REFRESH}`")
            for name, value in rendered.items() if params[name] != value]


def _released_problems(params: dict) -> list[tuple[str, str]]:
    """With a released biLM (``bilm_source.path``) nothing may read what only pretraining here makes:
    a fine-tuned biLM (its softmax) or ``models/bilm``."""
    released = released_bilm(params)
    if released is None:
        return []
    fix = f"`python -m workflow.profile {params.get('profile', 'NAME')} --released PATH` sets it"
    problems = [(f"elmo_specs.{name}.bilm", f"'finetuned' needs the biLM's softmax, which the released weights "
                 f"{released} do not hold (no domain fine-tuning): use 'base' ({fix})")
                for name, spec in params["elmo_specs"].items() if spec.get("bilm") == "finetuned"]
    probe = params["probes"]["sources"].get("bilm")
    if probe and probe["model"] == PRETRAINED_BILM:
        problems.append(("probes.sources.bilm.model", f"{PRETRAINED_BILM} is not trained when bilm_source.path names "
                         f"released weights: probe {released} ({fix})"))
    return problems


def _probe_layer_problems(params: dict) -> list[tuple[str, str]]:
    """A probed layer must exist: the biLM's 0 (char CNN) .. lstm.n_layers, CoVe's 1 .. model.layers;
    a run's fixed layer indexes its feature file: the biLM's 0 .. lstm.n_layers, CoVe's 0 .. model.layers - 1.
    (A released biLM's own layer count is checked against its options.json by stages.check_params.)"""
    bounds = {"bilm": (0, params["bilm"]["lstm"]["n_layers"], "bilm.lstm.n_layers"),
              "cove": (1, params["cove"]["model"]["layers"], "cove.model.layers")}
    problems = []
    for source, entry in params["probes"]["sources"].items():
        low, high, key = bounds[source]
        for i, layer in enumerate(entry["layers"]):
            if not low <= layer <= high:
                problems.append((f"probes.sources.{source}.layers[{i}]",
                                 f"layer {layer} is outside the model: {low} .. {high} ({key})"))
    cove_layers, bilm_layers = params["cove"]["model"]["layers"], params["bilm"]["lstm"]["n_layers"]
    for name, spec in params["elmo_specs"].items():
        if spec.get("mix") != "fixed":
            continue
        layer = spec.get("layer") or 0
        if spec.get("bilm") == "cove" and layer >= cove_layers:      # a run's CoVe layers: its file's 0 .. L-1
            problems.append((f"elmo_specs.{name}.layer", f"CoVe's layers are 0 .. {cove_layers - 1} here (its "
                             "first biLSTM layer is 0: no char layer; cove.model.layers)"))
        elif spec.get("bilm") != "cove" and layer > bilm_layers:       # the biLM's 0 (char CNN) .. n_layers
            problems.append((f"elmo_specs.{name}.layer", f"layer {layer} is outside the biLM: 0 .. {bilm_layers} "
                             "(0 = the char layer; bilm.lstm.n_layers)"))
    neighbours = params["probes"]["neighbours"]["layer"]
    if neighbours > params["bilm"]["lstm"]["n_layers"]:
        problems.append(("probes.neighbours.layer", f"layer {neighbours} is outside the biLM: 0 .. "
                         f"{params['bilm']['lstm']['n_layers']} (bilm.lstm.n_layers)"))
    return problems


def _first_difference(runs: dict, rendered: dict) -> str | None:
    def flat(section: dict) -> dict[str, Any]:
        return {f"runs.{job}.{fam}.{rid}": spec for job, families in section.items() if isinstance(families, dict)
                for fam, items in families.items() for rid, spec in items.items()}
    have, want = flat(runs), flat(rendered)
    for key, spec in want.items():
        if key not in have:
            return f"{key}: missing"
        if have[key] != spec:
            return f"{key}: differs from its rendering"
    for key in have:
        if key not in want:
            return f"{key}: no table lists it"
    for job, families in runs.items():                   # a family no task has
        for fam in families:
            if fam not in rendered.get(job, {}):
                return f"runs.{job}.{fam}: no table lists it"
    return None
