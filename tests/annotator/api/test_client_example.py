"""The client example of docs/api.md runs against the live test server (import -> run -> wait ->
plan -> release -> download), as a separate process that knows only the URL and a token; and
the doc shows that very script, so the two cannot drift apart."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from annotator.models import Assignment, Export

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "docs" / "examples" / "api_client.py"
DOC = ROOT / "docs" / "api.md"
CORPUS = [
    {"id": "n1", "messages": [
        {"speaker": "Tutor", "text": "Hi Maria, email me at maria.lopez@example.com if 3/4 is hard.",
         "spans": [{"start": 3, "end": 8, "label": "NAME"}, {"start": 22, "end": 45, "label": "EMAIL"}]},
        {"speaker": "Student", "text": "is 3/4 bigger than 2/3?"}]},
    {"id": "n2", "messages": [{"speaker": "Student", "text": "divide 4815162342 by 2"}]},
]


def test_the_doc_shows_the_example_script_verbatim():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert SCRIPT.read_text(encoding="utf-8") in blocks


@pytest.mark.django_db(transaction=True)
def test_the_example_script_runs_a_whole_pipeline_against_the_live_server(live_server, members, project, tmp_path):
    from annotator.services.api_tokens import token_create

    project.second_opinion_presidio = False  # the rules' second opinion is enough here, and fast
    project.save(update_fields=["second_opinion_presidio"])
    _, token = token_create(user=members["admin"], name="pipeline")
    corpus = tmp_path / "nightly.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    env = {"PATH": os.environ["PATH"], "BLINDSPOT_URL": live_server.url, "BLINDSPOT_TOKEN": token}
    result = subprocess.run([sys.executable, str(SCRIPT), "test", str(corpus), str(tmp_path / "out")],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "imported 2 dialogue(s)" in result.stdout and "0 leak(s)" in result.stdout
    release = Export.objects.get(project=project, kind=Export.Kind.RELEASE)
    assert Assignment.objects.filter(project=project).exists()  # the flagged messages were planned
    for file in release.files:
        downloaded = (tmp_path / "out" / file["name"]).read_bytes()
        assert hashlib.sha256(downloaded).hexdigest() == file["sha256"]
    text = (tmp_path / "out" / "release.jsonl").read_text(encoding="utf-8")
    assert "maria.lopez@example.com" not in text and "3/4 bigger than 2/3" in text
    # a second night with the same file: nothing new, and the script still goes through
    again = subprocess.run([sys.executable, str(SCRIPT), "test", str(corpus), str(tmp_path / "out2")],
                           env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "imported 0 dialogue(s), skipped 2" in again.stdout, again.stderr


@pytest.mark.django_db(transaction=True)
def test_the_example_script_stops_with_the_servers_message(live_server, members, project, tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"id": "x", "messages": [\n', encoding="utf-8")
    env = {"PATH": os.environ["PATH"], "BLINDSPOT_URL": live_server.url, "BLINDSPOT_TOKEN": "bs_bad_token"}
    refused = subprocess.run([sys.executable, str(SCRIPT), "test", str(corpus), str(tmp_path)],
                             env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "401" in refused.stderr and "Bearer" in refused.stderr
