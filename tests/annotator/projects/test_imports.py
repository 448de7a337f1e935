import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import (
    AuditEvent,
    BackgroundJob,
    DetectorRun,
    Dialogue,
    GoldSpan,
    Message,
    Prediction,
)
from annotator.services.imports import corpus_import, corpus_parse
from pipeline.corpus import CorpusError, ParseReport

pytestmark = pytest.mark.django_db


def _lines(*objs) -> bytes:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs).encode()


GOOD = {"id": "ok", "messages": [{"speaker": "Tutor", "text": "Hello there"}]}


def _nothing_written():
    assert Dialogue.objects.count() == 0
    assert Message.objects.count() == 0
    assert DetectorRun.objects.count() == 0


def _import(project, raw: bytes, name="c.jsonl", **kw):
    report = ParseReport()
    dialogues = corpus_parse(project=project, raw=raw, name=name, report=report)
    return corpus_import(project=project, dialogues=dialogues, source=name, normalised=report.normalised,
                         derived_ids=report.derived_ids, **kw)


BAD_INPUTS = {
    "wrong encoding": ("c.jsonl", "{\"id\": \"a\", \"messages\": [{\"speaker\": \"T\", \"text\": \"caf\xe9\"}]}\n".encode("latin-1"), "not valid UTF-8"),
    "malformed json": ("c.jsonl", _lines(GOOD, '{"id": "x", "messages": ['), "line 2: malformed JSON"),
    "missing id": ("c.jsonl", _lines({"messages": [{"speaker": "T", "text": "hi"}]}), "missing or empty 'id'"),
    "empty text": ("c.jsonl", _lines({"id": "a", "messages": [{"speaker": "T", "text": "  "}]}), "empty 'text'"),
    "missing speaker": ("c.jsonl", _lines({"id": "a", "messages": [{"text": "hi"}]}), "empty 'speaker'"),
    "no messages": ("c.jsonl", _lines({"id": "a", "messages": []}), "non-empty list"),
    "duplicate ids": ("c.jsonl", _lines(GOOD, {**GOOD, "messages": [{"speaker": "Tutor", "text": "Hello again"}]}),
                      "line 2: duplicate dialogue id 'ok' (first on line 1) with other messages"),
    "span out of range": ("c.jsonl", _lines({"id": "a", "messages": [{"speaker": "T", "text": "hi",
                          "spans": [{"start": 0, "end": 9, "label": "NAME"}]}]}), "runs past the end"),
    "empty span": ("c.jsonl", _lines({"id": "a", "messages": [{"speaker": "T", "text": "hi",
                   "spans": [{"start": 1, "end": 1, "label": "NAME"}]}]}), "empty or negative"),
    "unknown label": ("c.jsonl", _lines({"id": "a", "messages": [{"speaker": "T", "text": "hi",
                      "spans": [{"start": 0, "end": 2, "label": "PET"}]}]}), "unknown label 'PET'"),
    "csv missing column": ("c.csv", b"dialogue_id,speaker,text\nd1,T,hi\n", "lacks column(s) seq"),
    "csv bad seq": ("c.csv", b"dialogue_id,seq,speaker,text\nd1,one,T,hi\n", "line 2: 'seq' must be an integer"),
    "csv empty text": ("c.csv", b"dialogue_id,seq,speaker,text\nd1,0,T,hi\nd1,1,S,\n", "line 3: message 1: missing or empty 'text'"),
    "csv duplicate seq": ("c.csv", b"dialogue_id,seq,speaker,text\nd1,0,T,hi\nd1,0,S,yo\n", "'seq' 0 twice"),
    "empty file": ("c.jsonl", b"\n\n", "no dialogues"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_named_and_nothing_is_written(project, case):
    name, raw, expected = BAD_INPUTS[case]
    with pytest.raises(CorpusError) as info:
        _import(project, raw, name=name)
    assert expected in str(info.value)
    _nothing_written()


def test_every_problem_is_reported_not_just_the_first(project):
    raw = _lines({"id": "a", "messages": [{"speaker": "T", "text": ""}]}, "{oops", {"messages": []})
    with pytest.raises(CorpusError) as info:
        _import(project, raw)
    assert sorted({p.line for p in info.value.problems}) == [1, 2, 3]


def test_file_over_the_size_limit_is_refused(project, settings):
    settings.BLINDSPOT_IMPORT_MAX_BYTES = 10
    with pytest.raises(CorpusError, match="over the 10-byte import limit"):
        _import(project, _lines(GOOD))
    _nothing_written()


def test_failure_mid_write_rolls_back_everything(project, corpus_bytes, monkeypatch):
    from annotator.services import imports

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(imports, "_import_spans", boom)
    with pytest.raises(RuntimeError):
        _import(project, corpus_bytes)
    _nothing_written()


def test_jsonl_import_with_spans_as_run(project, corpus_bytes):
    result = _import(project, corpus_bytes, name="upstream.jsonl")
    assert (result.dialogues, result.messages, result.spans) == (2, 6, 2)
    d1 = Dialogue.objects.get(external_id="d1")
    assert d1.anchor.startswith("If Alex")
    msgs = list(d1.messages.order_by("position"))
    assert [m.speaker_role for m in msgs] == ["tutor", "student", "tutor", "student"]
    run = DetectorRun.objects.get()
    assert run.detector == "import:upstream.jsonl" and run.source == "import"
    assert sorted(Prediction.objects.values_list("label", flat=True)) == ["EMAIL", "NAME"]
    assert AuditEvent.objects.filter(action="corpus.import").count() == 1


def test_spans_as_gold(project, corpus_bytes):
    _import(project, corpus_bytes, spans_as="gold")
    assert GoldSpan.objects.count() == 2
    assert DetectorRun.objects.count() == 0


def test_csv_import_orders_by_seq(project):
    raw = b"dialogue_id,seq,speaker,text,ts\nd1,1,Student,second,00:02\nd1,0,Tutor,first,00:01\nd2,0,T,x,\n"
    _import(project, raw, name="c.csv")
    texts = list(Message.objects.filter(dialogue__external_id="d1").order_by("position").values_list("text", "ts"))
    assert texts == [("first", "00:01"), ("second", "00:02")]


def test_reimport_is_refused_by_default_and_idempotent_with_skip(project, corpus_bytes):
    _import(project, corpus_bytes)
    with pytest.raises(CorpusError, match="already exist"):
        _import(project, corpus_bytes)
    assert Message.objects.count() == 6
    more = corpus_bytes + _lines({"id": "d3", "messages": [{"speaker": "T", "text": "new"}]})
    result = _import(project, more, skip_existing=True)
    assert (result.dialogues, len(result.skipped)) == (1, 2)
    result = _import(project, more, skip_existing=True)
    assert result.dialogues == 0
    assert Message.objects.count() == 7


def test_same_ids_in_another_project_are_fine(project, corpus_bytes):
    from annotator.services.projects import project_create

    other = project_create(name="Other", slug="other")
    _import(project, corpus_bytes)
    _import(other, corpus_bytes)
    assert Dialogue.objects.count() == 4


def test_import_command(project, tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_bytes(_lines(GOOD))
    call_command("import_corpus", str(path), project="test")
    assert "Imported 1 dialogues" in capsys.readouterr().out
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("import_corpus", str(path), project="test")
    with pytest.raises(CommandError, match="No project"):
        call_command("import_corpus", str(path), project="nope")


def test_upload_page_imports_through_a_job(client, members, corpus_bytes, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {
            "file": SimpleUploadedFile("c.jsonl", corpus_bytes), "spans_as": "gold",
        })
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert b"Succeeded" in page.content
    assert Message.objects.count() == 6 and GoldSpan.objects.count() == 2


def test_upload_with_errors_shows_them_and_writes_nothing(client, members, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {
            "file": SimpleUploadedFile("c.jsonl", _lines(GOOD, "{bad")), "spans_as": "run",
        })
    response = client.get(response["Location"])
    assert b"line 2: malformed JSON" in response.content
    assert b"Nothing was written" in response.content
    _nothing_written()


CRLF_TEXT = "Hello\r\nmy name is Fred Smith\r\nand I live in Paris"


def test_crlf_is_stored_as_lf_with_spans_moved_and_counted_in_the_report(project):
    start = CRLF_TEXT.index("Paris")
    raw = _lines({"id": "a", "messages": [
        {"speaker": "S", "text": CRLF_TEXT, "spans": [{"start": start, "end": start + 5, "label": "LOCATION"}]},
        {"speaker": "T", "text": "no line break"},
    ]}, {"id": "b", "messages": [{"speaker": "S", "text": "one\rtwo"}]})
    result = _import(project, raw)
    assert result.normalised == 2 and result.to_dict()["normalised"] == 2
    m = Message.objects.get(dialogue__external_id="a", position=0)
    assert "\r" not in m.text
    p = Prediction.objects.get()
    assert m.text[p.start:p.end] == "Paris"
    assert Message.objects.get(dialogue__external_id="b").text == "one\ntwo"


@pytest.mark.parametrize("raw,expected", [
    (_lines(GOOD, {"id": "x" * 201, "messages": [{"speaker": "T", "text": "hi"}]}), "line 2: 'id' is 201 characters"),
    (_lines(GOOD, {"id": "a", "messages": [{"speaker": "T", "text": "Fred\u0000Smith"}]}), "line 2: message 0: 'text' contains the control character U+0000"),
    (_lines({"id": "a", "meta": {"k": "\u0000"}, "messages": [{"speaker": "T", "text": "hi"}]}), "line 1: 'meta' contains"),
    (b'{"id": "a", "messages": [{"speaker": "T", "text": "Fred", "spans": [{"start": 0, "end": 4, "label": "NAME", '
     b'"score": NaN}]}]}\n', "line 1: message 0 span 0: 'score' must be a finite number"),
], ids=["long id", "NUL in text", "NUL in meta", "NaN score"])
def test_values_the_database_would_refuse_or_mangle_are_line_numbered_errors(project, raw, expected):
    """The same refusal on SQLite and PostgreSQL: nothing reaches the database."""
    with pytest.raises(CorpusError) as info:
        _import(project, raw)
    assert expected in str(info.value)
    _nothing_written()


def test_import_command_reports_normalised_messages(project, tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_bytes(_lines({"id": "a", "messages": [{"speaker": "T", "text": CRLF_TEXT}]}))
    call_command("import_corpus", str(path), project="test")
    assert "1 message with CR line breaks stored with LF" in capsys.readouterr().out


def test_upload_names_the_run_after_the_uploaded_file(client, members, corpus_bytes, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(members["admin"])
    raw = corpus_bytes + _lines({"id": "crlf", "messages": [{"speaker": "T", "text": CRLF_TEXT}]})
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {
            "file": SimpleUploadedFile("upstream-2024.jsonl", raw), "spans_as": "run",
        })
    run = DetectorRun.objects.get()
    assert run.detector == "import:upstream-2024.jsonl"
    assert run.config == {"file": "upstream-2024.jsonl"} and run.model_version == "upstream-2024.jsonl"
    assert set(Dialogue.objects.values_list("source", flat=True)) == {"upstream-2024.jsonl"}
    page = client.get(response["Location"])
    assert b"1 message with CR line breaks was stored with LF" in page.content


# --- files whose items carry no ids (Label Studio, doccano, DocBin) ---------------------------------


def _no_id_file(fmt: str, *texts: str) -> bytes:
    if fmt == "labelstudio":
        return json.dumps([{"data": {"text": t}, "annotations": [{"result": []}]} for t in texts]).encode()
    if fmt == "doccano":
        return "".join(json.dumps({"text": t, "label": []}) + "\n" for t in texts).encode()
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    return DocBin(docs=[nlp.make_doc(t) for t in texts]).to_bytes()


NO_ID_EXT = {"labelstudio": "json", "doccano": "jsonl", "spacy": "spacy"}


@pytest.mark.parametrize("fmt", sorted(NO_ID_EXT))
def test_a_second_file_without_ids_is_imported_in_full_and_a_reimport_is_skipped(project, fmt):
    """Before, both files made task-1, task-2 …: the second was refused, or with skip_existing
    silently dropped. Now ids come from the file name and content."""
    ext = NO_ID_EXT[fmt]
    first = _import(project, _no_id_file(fmt, "Hello there", "Hi Maria"), name=f"monday.{ext}")
    second = _import(project, _no_id_file(fmt, "Good morning", "Hi Maria", "Bye"), name=f"tuesday.{ext}")
    assert (first.dialogues, second.dialogues, second.skipped) == (2, 3, [])
    assert (first.derived_ids, second.derived_ids) == (2, 3)
    assert second.to_dict()["derived_ids"] == 3
    assert Message.objects.count() == 5
    # the same file again: the same ids, so it is refused by default and skipped in full with skip_existing
    with pytest.raises(CorpusError, match="already exist"):
        _import(project, _no_id_file(fmt, "Good morning", "Hi Maria", "Bye"), name=f"tuesday.{ext}")
    again = _import(project, _no_id_file(fmt, "Good morning", "Hi Maria", "Bye", "New"), name=f"tuesday.{ext}",
                    skip_existing=True)
    assert (again.dialogues, len(again.skipped), again.derived_ids) == (1, 3, 4)
    assert Message.objects.count() == 6


def test_import_command_says_how_ids_were_made(project, tmp_path, capsys):
    for day in ("monday", "tuesday"):
        path = tmp_path / f"{day}.json"
        path.write_bytes(_no_id_file("labelstudio", "Hello there", "Hi Maria"))
        call_command("import_corpus", str(path), project="test")
        assert "ids: 2 derived from the file name and content (the file had none)" in capsys.readouterr().out
    assert Dialogue.objects.count() == 4
    path = tmp_path / "named.jsonl"
    path.write_bytes(_lines(GOOD))
    call_command("import_corpus", str(path), project="test")
    assert "derived" not in capsys.readouterr().out


def test_upload_page_says_how_ids_were_made(client, members, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {
            "file": SimpleUploadedFile("export.jsonl", _no_id_file("doccano", "a", "b", "c")), "spans_as": "run",
        })
    page = client.get(response["Location"])
    assert b"The file gave no id to 3 dialogues: their ids were derived from the file name" in page.content
    assert all(i.startswith("export-") for i in Dialogue.objects.values_list("external_id", flat=True))


def test_the_upload_page_refuses_a_file_over_the_limit_before_storing_it(client, members, settings):
    """The limit is the import form's (the page and the API share it): nothing is queued."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.BLINDSPOT_IMPORT_MAX_BYTES = 10
    client.force_login(members["admin"])
    response = client.post("/p/test/import/", {"file": SimpleUploadedFile("c.jsonl", _lines(GOOD)), "spans_as": "run"})
    assert response.status_code == 200 and b"over the 10-byte limit" in response.content
    assert not BackgroundJob.objects.exists()
