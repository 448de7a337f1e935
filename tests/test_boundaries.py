"""pipeline/ stays importable without Django (every module, checked in a clean interpreter) and keeps
its floors: the whole floor map is data here, and no import points up a floor or closes a loop."""

import ast
import subprocess
import sys
from collections.abc import Callable
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

# The floors of pipeline/, bottom up (docs/architecture.md draws them): every module or package is
# on exactly one floor, named by the longest prefix listed here, and imports only its own floor and
# the floors below, module-level and function-local imports alike. Imports within one floor are
# allowed but may not close a loop. A new module gets its line here.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # types, errors, span and text helpers, CSV cells, tag schemes, file hashes: imports nothing above
    ("ground", ("pipeline", "pipeline.types", "pipeline.errors", "pipeline.spans", "pipeline.text",
                "pipeline.csvsafe", "pipeline.tags", "pipeline.hashing")),
    # building blocks: filters and maths, embeddings and the LLM client, the import format and the
    # format catalog (and the gold bundle it writes), the detector registry and the process pool,
    # adjudication and assignment rules, the synthetic corpus
    ("blocks", ("pipeline.filters", "pipeline.maths", "pipeline.embeddings", "pipeline.llm_client",
                "pipeline.prompting", "pipeline.corpus", "pipeline.formats", "pipeline.exports",
                "pipeline.registry", "pipeline.parallel", "pipeline.adjudication", "pipeline.assignment",
                "pipeline.synthetic", "pipeline.speakers")),
    # scores and reports over dialogues with spans (no files), and the annotation simulation on them
    ("metrics", ("pipeline.metrics", "pipeline.simulate")),
    # the trained tagger: encoding, model, training (scored by metrics), store, ONNX, post-filter
    ("tagger", ("pipeline.tagger",)),
    # detectors (the tagger's way into runs among them) and the Presidio bridge
    ("detectors", ("pipeline.detectors", "pipeline.presidio_recognizer")),
    # de-identification, its leak and utility checks, the release writer
    ("surrogates", ("pipeline.surrogates",)),
    # what reads and writes files around the floors below: evaluation from files, the dev set
    ("files", ("pipeline.evaluate_files", "pipeline.devset")),
)


def _floor_of(floors: tuple[tuple[str, tuple[str, ...]], ...]) -> Callable[[str], int | None]:
    """The floor of a module: the one whose longest listed prefix names it."""
    level_of = {prefix: level for level, (_, prefixes) in enumerate(floors) for prefix in prefixes}

    def floor(module: str) -> int | None:
        name = module
        while name:
            if name in level_of:
                return level_of[name]
            name = name.rpartition(".")[0]
        return None

    return floor


def _off_floor(graph: dict[str, set[str]], floors: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """Modules on no floor, and floor entries that name no module."""
    floor = _floor_of(floors)
    listed = [p for _, prefixes in floors for p in prefixes]
    assert len(listed) == len(set(listed))
    return sorted(m for m in graph if floor(m) is None) + sorted(f"gone: {p}" for p in listed if p not in graph)


def _upward(graph: dict[str, set[str]], floors: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, list[str]]:
    floor = _floor_of(floors)
    return {
        m: sorted(f"{d} ({floors[floor(d)][0]})" for d in deps if floor(d) > floor(m))
        for m, deps in graph.items()
        if any(floor(d) > floor(m) for d in deps)
    }


def _imports(package: str, *, module_level_only: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``from pkg import submodule`` names the
    submodule, not the package's ``__init__``). Function-local imports count unless
    ``module_level_only``: a lazy import hides a circle, it does not remove one. Migrations and
    ``__main__`` scripts are left out."""
    files = {}
    for p in (ROOT / package).rglob("*.py"):
        if p.name == "__main__.py" or "migrations" in p.parts:
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
                deps.update(resolve(a.name) for a in node.names if a.name.split(".")[0] == package)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                subs = [s for s in subs if s in files]
                deps.update(subs)
                if len(subs) < len(node.names):
                    deps.add(resolve(node.module))
        graph[mod] = {d for d in deps if d and d != mod}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import loop found by a depth-first walk (each as the path that closes it)."""
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
    return cycles


def test_every_pipeline_module_is_on_a_floor():
    assert _off_floor(_imports("pipeline"), FLOORS) == []


def test_no_pipeline_import_points_up_a_floor():
    assert _upward(_imports("pipeline"), FLOORS) == {}


def test_no_import_cycles_in_pipeline():
    assert _cycles(_imports("pipeline")) == []


# -- layering inside annotator/ ---------------------------------------------------------------

# annotator/'s floors, bottom up (docs/architecture.md): views call services and selectors,
# services write through models and read through selectors, and never import a task or a view;
# tasks (ids in, one service call) sit above the services they call. Same rules as pipeline/'s.
ANNOTATOR_FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("settings", ("annotator.settings", "annotator.settings_test", "annotator.envfile", "annotator.cache",
                  "annotator.task_names")),
    ("models", ("annotator.models",)),
    ("infrastructure", ("annotator.access", "annotator.adapters", "annotator.rendering", "annotator.charts",
                        "annotator.celery", "annotator.dispatch", "annotator.storage", "annotator.model_store",
                        "annotator.outbound", "annotator.bulk")),
    ("selectors", ("annotator.selectors",)),
    ("services", ("annotator.services",)),
    ("forms and tasks", ("annotator.forms", "annotator.tasks")),
    ("pages and commands", ("annotator.views", "annotator.api", "annotator.templatetags", "annotator.middleware",
                            "annotator.admin", "annotator.management")),
    ("wiring", ("annotator", "annotator.apps", "annotator.urls", "annotator.wsgi")),
)


def test_every_annotator_module_is_on_a_floor():
    assert _off_floor(_imports("annotator"), ANNOTATOR_FLOORS) == []


def test_no_annotator_import_points_up_a_floor():
    assert _upward(_imports("annotator"), ANNOTATOR_FLOORS) == {}


def test_no_import_cycles_in_annotator():
    assert _cycles(_imports("annotator")) == []
