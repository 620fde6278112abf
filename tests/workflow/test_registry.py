"""The registry is the single source of truth: dvc.yaml and params.yaml are its renders."""

import importlib
from pathlib import Path

import yaml

from workflow import profile, render
from workflow.registry import LOGGING_CODE, STAGES

ROOT = Path(__file__).resolve().parents[2]


def test_dvc_yaml_is_the_render_of_the_registry():
    assert (ROOT / "dvc.yaml").read_text(encoding="utf-8") == render.render_dvc()


def test_committed_params_are_the_tiny_profile():
    committed = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert committed == profile.render("tiny")


def test_every_stage_reads_exactly_its_declared_sections():
    for stage in STAGES:
        module = importlib.import_module(f"stages.{stage.module}")
        assert module.SECTIONS == stage.params, stage.name
        assert (ROOT / "stages" / f"{stage.module}.py").is_file()


def test_code_dependencies_exist():
    for stage in STAGES:
        for dep in stage.all_deps:
            if dep.startswith(("stages/", "src/")):
                assert (ROOT / dep).exists(), f"{stage.name}: {dep}"


def test_dag_is_connected_one_way():
    produced = {out: s.name for s in STAGES for out in [*s.outs, *s.committed, *s.metrics]}
    order = [s.name for s in STAGES]
    for stage in STAGES:
        for dep in stage.all_deps:
            producer = next((name for out, name in produced.items()
                             if dep == out or dep.startswith(out + "/")), None)
            if producer:
                assert order.index(producer) < order.index(stage.name), (stage.name, dep)


def test_profiles_override_only_known_keys():
    base = profile.render("tiny")

    def keys(tree, prefix=""):
        return {prefix + k for k in tree} | {x for k, v in tree.items() if isinstance(v, dict)
                                              for x in keys(v, prefix + k + ".")}

    for name in profile.available():
        assert keys(profile.render(name)) == keys(base), name


def _local_imports(path: Path, seen: set[Path]) -> set[Path]:
    """Project files (src/elmo_repro, stages) that ``path`` imports, transitively; imports under
    ``if TYPE_CHECKING:`` are annotations only and left out."""
    import ast

    if path in seen:
        return seen
    seen.add(path)
    if path.is_relative_to(ROOT / "src"):
        package = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
    else:
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    else:
        package = package.removesuffix(".__init__")

    def module_file(name: str) -> Path | None:
        parts = name.split(".")
        base = ROOT / "src" if parts[0] == "elmo_repro" else ROOT if parts[0] == "stages" else None
        if base is None:
            return None
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
        return None

    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(n) for node in ast.walk(tree)
                 if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                 for statement in node.body for n in ast.walk(statement)}
    names = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names]      # submodules
    for name in names:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):                                   # packages' __init__ run too
            found = module_file(".".join(parts[:k]))
            if found is not None:
                _local_imports(found, seen)
    return seen


def test_every_stage_depends_on_all_the_code_it_imports():
    """A stage must re-run when any project file it imports changes: each file a stage's module
    imports (transitively) lies under one of its declared dependencies (the logging-only modules
    and package ``__init__`` files aside)."""
    for stage in STAGES:
        deps = [ROOT / d for d in [*stage.all_deps, *LOGGING_CODE] if d.startswith(("stages/", "src/"))]
        imported = _local_imports(ROOT / "stages" / f"{stage.module}.py", set())
        missing = sorted(str(f.relative_to(ROOT)) for f in imported
                         if f.name != "__init__.py" and not any(f == d or f.is_relative_to(d) for d in deps))
        assert not missing, f"{stage.name} imports {missing} but does not depend on them"


def test_the_import_scan_finds_real_imports():
    """The scan behind the test above: a stage's own imports, relative imports and submodules."""
    found = {str(f.relative_to(ROOT)) for f in _local_imports(ROOT / "stages" / "pretrain_bilm.py", set())}
    assert {"src/elmo_repro/bilm/train.py", "src/elmo_repro/data/prefetch.py",       # via ..data.prefetch
            "src/elmo_repro/bilm/lstm.py", "stages/__init__.py"} <= found
    assert "src/elmo_repro/bilm/token_cache.py" not in found                          # TYPE_CHECKING only
