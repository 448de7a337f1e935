"""The size rules of the house: no function or method in annotator/ or pipeline/ over 60 lines and
no module over 600. A long function hides its phases and a long module hides its areas; both wear
in one edit at a time, so the limits are tested rather than remembered.

A function is measured from its ``def`` line to its last line (``end_lineno``), its decorators
left out: they are configuration, not body. Migrations are generated and left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHECKED_PACKAGES = ("annotator", "pipeline")
SKIPPED_DIRS = {"migrations", "__pycache__"}
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 600


def oversized(root: Path) -> list[str]:
    """Every function over ``MAX_FUNCTION_LINES`` and module over ``MAX_MODULE_LINES`` lines under
    ``root``'s checked packages, as ``path: name (N lines)``."""
    found = []
    for package in CHECKED_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if SKIPPED_DIRS.intersection(rel.parts):
                continue
            source = path.read_text(encoding="utf-8")
            lines = len(source.splitlines())
            if lines > MAX_MODULE_LINES:
                found.append(f"{rel}: module ({lines} lines)")
            found.extend(f"{rel}: {name} ({length} lines)" for name, length in _long_functions(ast.parse(source)))
    return found


def _long_functions(tree: ast.Module) -> list[tuple[str, int]]:
    """(qualified name, length) of each function or method over the limit, nested ones included."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = child.end_lineno - child.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append((f"{prefix}{child.name}", length))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


HOW_TO_FIX = (
    f"functions stay within {MAX_FUNCTION_LINES} lines and modules within {MAX_MODULE_LINES}: split each "
    "by what it does (a function into named phases, a module into modules or a package by area), "
    "not into arbitrary chunks:\n"
)


def test_no_function_or_module_is_too_long():
    offenders = oversized(ROOT)
    assert not offenders, HOW_TO_FIX + "\n".join(offenders)


def test_the_check_finds_a_planted_long_function_and_module(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "pipeline" / "metrics").mkdir(parents=True)
    (tmp_path / "pipeline" / "metrics" / "long.py").write_text(
        f"@decorated\ndef long_one():\n{body}\n\nclass Thing:\n    def fits(self):\n        return 1\n"
    )
    (tmp_path / "annotator" / "migrations").mkdir(parents=True)
    (tmp_path / "annotator" / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "annotator" / "migrations" / "0001_initial.py").write_text("x = 1\n" * 5000)
    (tmp_path / "annotator" / "views.py").write_text(
        f"class Page:\n    def get(self):\n{body.replace('    ', '        ')}"
    )
    assert oversized(tmp_path) == [
        f"annotator/big.py: module ({MAX_MODULE_LINES + 1} lines)",
        f"annotator/views.py: Page.get ({MAX_FUNCTION_LINES + 1} lines)",
        f"pipeline/metrics/long.py: long_one ({MAX_FUNCTION_LINES + 1} lines)",
    ]
