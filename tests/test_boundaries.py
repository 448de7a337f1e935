"""pipeline/ must stay importable without Django: every module, checked in a clean interpreter."""

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
