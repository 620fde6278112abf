"""docs/pipeline.md and the README name what the code has: every task, every view, every profile,
and every table the analysis job builds (a new one added to the code and not to the docs fails here)."""

import re
from pathlib import Path

from elmo_repro.experiments.tasks import TASKS
from stages.table import VIEWS
from workflow.profile import available
from workflow.registry import job_stages

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = (ROOT / "docs/pipeline.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_layout_names_every_task_folder_and_view():
    layout = PIPELINE.split("## Layout", 1)[1]
    assert not [task for task in TASKS if f"{task}/:" not in layout]
    views = layout.split("views/ (", 1)[1].split(")", 1)[0]
    assert not [view for view in (*VIEWS, "report") if not re.search(rf"\b{view}\b", views)]


def test_the_profiles_section_names_every_profile_and_every_task():
    section = PIPELINE.split("## Profiles", 1)[1].split("\n## ", 1)[0]
    assert not [name for name in available() if f"**{name}**" not in section]
    tiny = section.split("**tiny**", 1)[1].split("\n- ", 1)[0]
    assert not [task for task in TASKS if TASKS[task].title.lower().split("-")[0] not in tiny.lower()
                and task not in tiny.lower()]


def test_the_readme_lists_every_table_the_analysis_job_builds():
    rebuilding = README.split("## Rebuilding one table", 1)[1].split("\n## ", 1)[0]
    targets = {stage.name for stage in job_stages("analysis") if stage.module in ("table", "report")}
    assert targets and not [name for name in targets if not re.search(rf"\b{name}\b", rebuilding)]
