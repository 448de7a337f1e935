"""One task-name scheme: ``annotator.<area>.<verb>`` from annotator.task_names, old names as aliases."""

import ast
import re
from pathlib import Path

from annotator import task_names as names
from annotator.celery import app

ROOT = Path(__file__).resolve().parents[3]
AREAS = {p.stem for p in (ROOT / "annotator" / "tasks").glob("*.py")} - {"__init__"}
SCHEME = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}


def test_every_task_is_registered_under_a_name_of_the_scheme():
    ours = {n for n in app.tasks if n.startswith("annotator.")}
    assert ours - set(names.ALIASES) == SCHEME
    for name in SCHEME:
        area, verb = re.fullmatch(r"annotator\.([a-z]+)\.([a-z_]+)", name).groups()
        assert area in AREAS, f"{name}: no annotator/tasks/{area}.py"
        assert app.tasks[name].__module__ == f"annotator.tasks.{area}", name


def test_old_names_are_the_same_tasks():
    assert set(names.ALIASES.values()) <= SCHEME
    assert not set(names.ALIASES) & SCHEME
    for old, new in names.ALIASES.items():
        assert app.tasks[old] is app.tasks[new]
        assert app.tasks[old].name == new


def _string_names(path: Path) -> list[str]:
    """Task names written as strings: enqueue("…"), send("…"), name="…" in a decorator."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        args = node.args[:1] if func in {"enqueue", "send", "send_task"} else []
        args += [k.value for k in node.keywords if k.arg == "name" and func == "shared_task"]
        found += [f"{path.relative_to(ROOT)}:{a.lineno}" for a in args
                  if isinstance(a, ast.Constant) and str(a.value).startswith("annotator.")]
    return found


def test_services_and_tasks_name_tasks_by_constant():
    files = [p for sub in ("services", "tasks") for p in (ROOT / "annotator" / sub).glob("*.py")]
    files += [ROOT / "annotator" / "dispatch.py", ROOT / "annotator" / "middleware.py"]
    assert [hit for p in files for hit in _string_names(p)] == []
