"""Running the suite never writes into tracked files: browser screenshots go to a temporary
directory unless ``bin/screenshots`` asks for docs/screenshots/."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_screenshots_go_outside_the_checkout_unless_asked(screenshots_dir):
    if os.environ.get("BLINDSPOT_SCREENSHOTS"):
        assert screenshots_dir == Path(os.environ["BLINDSPOT_SCREENSHOTS"])
    else:
        assert ROOT not in screenshots_dir.resolve().parents


def test_the_refresh_command_names_the_tests_that_take_the_pictures():
    script = (ROOT / "bin" / "screenshots").read_text(encoding="utf-8")
    assert 'BLINDSPOT_SCREENSHOTS="$PWD/docs/screenshots"' in script
    for test in ("tests/annotator/workspace/test_browser.py", "tests/annotator/adjudication/test_browser_adjudication.py"):
        assert (ROOT / test).exists() and test in script
