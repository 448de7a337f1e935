"""Label Studio, doccano and spaCy DocBin files import like JSONL: by extension or --format, spans
as a run or as gold, all or nothing with numbered errors — from the command and the upload page."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import DetectorRun, Dialogue, GoldSpan, Message, Prediction
from pipeline.formats.doccano import write_doccano
from pipeline.formats.labelstudio import write_labelstudio
from pipeline.types import Dialogue as PDialogue
from pipeline.types import Message as PMessage
from pipeline.types import Span

pytestmark = pytest.mark.django_db


def dialogues() -> list[PDialogue]:
    t0, t1 = "Hi Maria 👋🏽 from Lincoln High", "thanks mr chen"
    return [PDialogue("d1", (
        PMessage(t0, "Tutor", "tutor", 0, None, (Span(3, 8, "NAME"), Span(17, 29, "SCHOOL"))),
        PMessage(t1, "Student", "student", 1, None, (Span(10, 14, "NAME"),)),
    ))]


def _file(tmp_path, fmt: str):
    if fmt == "spacy":
        from pipeline.formats.spacy_docbin import to_docbin

        path = tmp_path / "gold.spacy"
        path.write_bytes(to_docbin(dialogues())[0])
        return path
    fh = io.StringIO()
    (write_labelstudio if fmt == "labelstudio" else write_doccano)(dialogues(), fh)
    path = tmp_path / ("tasks.json" if fmt == "labelstudio" else "doccano.jsonl")
    path.write_text(fh.getvalue(), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["labelstudio", "doccano", "spacy"])
def test_import_command_reads_each_format_as_gold(project, tmp_path, capsys, fmt):
    if fmt == "spacy":
        pytest.importorskip("spacy")
    call_command("import_corpus", str(_file(tmp_path, fmt)), project="test", spans_as="gold")
    assert "Imported 1 dialogues, 2 messages, 3 spans" in capsys.readouterr().out
    rows = list(Message.objects.order_by("position").values_list("speaker", "text"))
    assert rows == [("Tutor", "Hi Maria 👋🏽 from Lincoln High"), ("Student", "thanks mr chen")]
    got = sorted((g.message.position, g.start, g.end, g.label) for g in GoldSpan.objects.select_related("message"))
    assert got == [(0, 3, 8, "NAME"), (0, 17, 29, "SCHOOL"), (1, 10, 14, "NAME")]


def test_format_option_overrides_the_extension_and_spans_become_a_run(project, tmp_path, capsys):
    path = _file(tmp_path, "labelstudio").rename(tmp_path / "export.txt")
    call_command("import_corpus", str(path), project="test", fmt="labelstudio")
    run = DetectorRun.objects.get()
    assert run.detector == "import:export.txt" and Prediction.objects.filter(run=run).count() == 3


def test_bad_doccano_file_names_its_lines_and_writes_nothing(project, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "Ana", "label": [[0, 3, "NAME"]]}\n{"text": "Bo", "label": [[0, 2, "PET"]]}\n',
                    encoding="utf-8")
    with pytest.raises(CommandError) as exc:
        call_command("import_corpus", str(path), project="test", fmt="doccano")
    assert "Nothing was imported" in str(exc.value) and "line 2: span 0: unknown label 'PET'" in str(exc.value)
    assert Dialogue.objects.count() == 0


def test_upload_page_takes_a_label_studio_file(client, members, tmp_path, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(members["admin"])
    raw = _file(tmp_path, "labelstudio").read_bytes()
    assert b"Label Studio" in client.get("/p/test/import/").content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {
            "file": SimpleUploadedFile("from-ls.txt", raw), "spans_as": "gold", "format": "labelstudio"})
    assert response.status_code == 302
    assert b"Succeeded" in client.get(response["Location"]).content
    assert Message.objects.count() == 2 and GoldSpan.objects.count() == 3
    assert json.loads(raw)[0]["data"]["dialogue_id"] == "d1"


def test_a_docbin_bomb_is_refused_against_the_import_limit_and_writes_nothing(project, tmp_path, settings):
    """A DocBin bomb: the upload is checked against BLINDSPOT_IMPORT_MAX_BYTES inflated, not as sent."""
    pytest.importorskip("spacy")
    import zlib

    import srsly
    from spacy.tokens import DocBin

    msg = {"version": "0.1", "attrs": DocBin().attrs, "tokens": bytes(20 * 1024 * 1024), "spaces": b"",
           "lengths": b"", "strings": [], "cats": [], "flags": [], "span_groups": []}
    path = tmp_path / "bomb.spacy"
    path.write_bytes(zlib.compress(srsly.msgpack_dumps(msg), 9))
    settings.BLINDSPOT_IMPORT_MAX_BYTES = 1_000_000
    assert path.stat().st_size < settings.BLINDSPOT_IMPORT_MAX_BYTES
    with pytest.raises(CommandError) as exc:
        call_command("import_corpus", str(path), project="test")
    assert "decompresses to more than 1,000,000 bytes, over the 1,000,000-byte import limit" in str(exc.value)
    assert not Dialogue.objects.exists()
