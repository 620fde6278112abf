"""The static import scan (workflow/imports.py) and the code fingerprint it shares with the biLM
checkpoints (elmo_repro.fingerprint)."""

import ast
import shutil
from pathlib import Path

import pytest

from elmo_repro.fingerprint import code_fingerprint
from workflow.imports import ROOT, ast_fingerprint, code_deps, local_imports

PKG = ROOT / "src" / "elmo_repro"
LOGGING = ["src/elmo_repro/console.py", "src/elmo_repro/tracking.py"]


def _relative(paths) -> set[str]:
    return {path.relative_to(ROOT).as_posix() for path in paths}


def test_pretraining_imports_its_training_code_but_not_the_test_reference():
    found = _relative(local_imports(ROOT / "stages" / "pretrain_bilm.py"))
    assert {"stages/pretrain_bilm.py",                  # itself
            "stages/__init__.py",                       # from stages import stage_args
            "src/elmo_repro/bilm/__init__.py",          # run by importing elmo_repro.bilm.model
            "src/elmo_repro/bilm/train.py",
            "src/elmo_repro/bilm/lstm.py",              # via model.py, relative import
            "src/elmo_repro/data/prefetch.py",          # via train.py: from ..data.prefetch import
            "src/elmo_repro/fingerprint.py"} <= found
    assert "src/elmo_repro/bilm/reference.py" not in found


def test_imports_under_type_checking_are_left_out():
    # features.py imports ..bilm.model only under `if TYPE_CHECKING:` (annotations)
    features = PKG / "elmo" / "features.py"
    guarded = [node for node in ast.walk(ast.parse(features.read_text(encoding="utf-8")))
               if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert any(isinstance(s, ast.ImportFrom) and s.module == "bilm.model" for s in guarded[0].body)
    found = _relative(local_imports(features))
    assert "src/elmo_repro/data/character_ids.py" in found    # an ordinary import is kept
    assert not any(path.startswith("src/elmo_repro/bilm/") for path in found)


def test_a_relative_path_is_taken_from_the_repository_root():
    stage = Path("stages/pretrain_bilm.py")
    assert local_imports(stage) == local_imports(ROOT / stage)


def test_code_deps_accepts_dotted_names_and_paths_and_excludes_the_given_files():
    by_path = code_deps("stages/pretrain_bilm.py")
    assert code_deps("stages.pretrain_bilm") == by_path == sorted(by_path)
    assert "src/elmo_repro/bilm/train.py" in by_path and "stages/pretrain_bilm.py" in by_path
    assert set(LOGGING) <= set(by_path)                        # imported by the stage ...
    trimmed = code_deps("stages.pretrain_bilm", exclude=LOGGING)
    assert set(trimmed) == set(by_path) - set(LOGGING)         # ... and left out on request
    # a package's name resolves to its __init__.py; data/__init__.py holds only a docstring
    assert "src/elmo_repro/data/__init__.py" not in by_path
    assert "src/elmo_repro/bilm/__init__.py" in by_path        # it runs `from .model import ...`
    package = code_deps("elmo_repro.bilm")
    assert "src/elmo_repro/bilm/__init__.py" in package and "src/elmo_repro/bilm/model.py" in package


def test_code_deps_rejects_unknown_entry_points():
    with pytest.raises(ValueError):
        code_deps("torch.nn")
    with pytest.raises(FileNotFoundError):
        code_deps("stages/no_such_stage.py")


def test_no_project_code_imports_the_test_only_reference():
    """bilm/reference.py exists for tests; no stage may depend on it, and the checkpoint
    fingerprint leaves it out on that ground."""
    users = [path.relative_to(ROOT).as_posix()
             for path in [*PKG.rglob("*.py"), *(ROOT / "stages").glob("*.py")]
             if PKG / "bilm" / "reference.py" in local_imports(path) and path.name != "reference.py"]
    assert not users


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_fingerprint_ignores_prose_and_sees_code(tmp_path):
    original = PKG / "bilm" / "lstm.py"
    copy = tmp_path / "bilm" / "lstm.py"
    copy.parent.mkdir()
    shutil.copy(original, copy)
    before = code_fingerprint([copy], tmp_path)

    _edit(copy, "from __future__ import annotations\n", "from __future__ import annotations  # why\n\n\n")
    _edit(copy, '"""', '"""An edited module docstring. ')
    tree = ast.parse(copy.read_text(encoding="utf-8"))
    for kind in (ast.ClassDef, ast.FunctionDef):        # one class and one function docstring
        node = next(n for n in ast.walk(tree) if isinstance(n, kind) and ast.get_docstring(n))
        _edit(copy, ast.get_docstring(node, clean=False), f"Reworded {kind.__name__}.")
    assert copy.read_text(encoding="utf-8") != original.read_text(encoding="utf-8")
    assert code_fingerprint([copy], tmp_path) == before

    copy.write_text(copy.read_text(encoding="utf-8") + "\nCONSTANT = 1\n", encoding="utf-8")
    changed = code_fingerprint([copy], tmp_path)
    assert changed != before
    _edit(copy, "CONSTANT = 1", "CONSTANT = 2")
    assert code_fingerprint([copy], tmp_path) not in (before, changed)


def test_the_fingerprint_names_files_relative_to_the_root(tmp_path):
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        shutil.copy(PKG / "bilm" / "highway.py", tmp_path / where / "highway.py")
    a, b = tmp_path / "a" / "highway.py", tmp_path / "b" / "highway.py"
    assert code_fingerprint([a], tmp_path / "a") == code_fingerprint([b], tmp_path / "b")   # moved checkout
    assert code_fingerprint([a], tmp_path) != code_fingerprint([b], tmp_path)               # renamed file


def test_ast_fingerprint_is_the_code_fingerprint_from_the_repository_root():
    files = [PKG / "bilm" / "lstm.py", PKG / "bilm" / "highway.py"]
    assert ast_fingerprint(files) == ast_fingerprint(reversed(files)) == code_fingerprint(files, ROOT)
    assert ast_fingerprint([Path("src/elmo_repro/bilm/lstm.py")]) == ast_fingerprint(files[:1])


def test_the_checkpoint_fingerprint_covers_the_bilm_code_but_not_the_reference():
    from elmo_repro.bilm import train

    covered = {path.relative_to(PKG).as_posix() for path in train._CODE}
    assert "bilm/reference.py" not in covered
    # every file the training code imports (logging and file writing aside) is covered
    imported = code_deps(PKG / "bilm" / "train.py",
                         exclude=[*LOGGING, "src/elmo_repro/io.py", "src/elmo_repro/fingerprint.py"])
    assert {path.removeprefix("src/elmo_repro/") for path in imported} - {"__init__.py"} <= covered
