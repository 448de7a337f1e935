"""pipeline/ must stay importable without Django: every module, checked in a clean interpreter."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pipeline_never_imports_django():
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "pipeline").rglob("*.py")
        if p.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m.removesuffix('.__init__'))\n"
        "bad = sorted(k for k in sys.modules if k == 'django' or k.startswith(('django.', 'annotator')))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_pipeline_sources_do_not_mention_django():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "pipeline").rglob("*.py")
        if "import django" in p.read_text() or "from django" in p.read_text()
        or "from annotator" in p.read_text()
    ]
    assert offenders == []


# -- layering inside pipeline/ ----------------------------------------------------------------

# The ground floor: types, errors, span helpers, label maps. Everything above may import it;
# it imports nothing of pipeline/ outside itself.
GROUND_FLOOR = frozenset(
    {"pipeline.types", "pipeline.errors", "pipeline.spans", "pipeline.text", "pipeline.csvsafe"}
)
# Low modules that detectors, metrics and the tagger build on: they must not reach back up.
NOT_ABOVE = {
    "pipeline.registry": ("pipeline.detectors",),
    "pipeline.embeddings": ("pipeline.detectors", "pipeline.metrics"),
    "pipeline.filters": ("pipeline.detectors", "pipeline.tagger", "pipeline.metrics"),
    "pipeline.detectors": ("pipeline.metrics",),
    "pipeline.llm_client": ("pipeline.detectors", "pipeline.surrogates"),
}


def _pipeline_imports(*, module_level_only: bool) -> dict[str, set[str]]:
    """Module -> the pipeline modules it imports (``from pkg import submodule`` names the
    submodule, not the package's ``__init__``)."""
    files = {}
    for p in (ROOT / "pipeline").rglob("*.py"):
        if p.name == "__main__.py":
            continue
        parts = p.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        tree = ast.parse(path.read_text())
        nodes = tree.body if module_level_only else list(ast.walk(tree))
        deps: set[str | None] = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names if a.name.startswith("pipeline"))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipeline"):
                subs = [f"{node.module}.{a.name}" for a in node.names]
                subs = [s for s in subs if s in files]
                deps.update(subs)
                if len(subs) < len(node.names):
                    deps.add(resolve(node.module))
        graph[mod] = {d for d in deps if d and d != mod}
    return graph


def test_ground_floor_imports_nothing_above_it():
    graph = _pipeline_imports(module_level_only=False)
    assert set(graph) >= GROUND_FLOOR
    upward = {m: sorted(graph[m] - GROUND_FLOOR) for m in GROUND_FLOOR if graph[m] - GROUND_FLOOR}
    assert upward == {}


def test_low_modules_do_not_import_the_layers_above():
    graph = _pipeline_imports(module_level_only=False)
    upward = {
        m: sorted(d for d in deps if d.startswith(banned))
        for low, banned in NOT_ABOVE.items()
        for m, deps in graph.items()
        if (m == low or m.startswith(low + ".")) and any(d.startswith(banned) for d in deps)
    }
    assert upward == {}


def test_no_import_cycles_in_pipeline():
    graph = _pipeline_imports(module_level_only=True)
    cycles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])
    assert cycles == []
