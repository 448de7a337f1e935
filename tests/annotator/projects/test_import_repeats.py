"""A real file that repeats a dialogue identically (Bridge lists one excerpt once
per annotation of it) imports as it is: the dialogue once, the repeats counted in the report.
A repeated id with other messages stays an error naming both lines, and the import stays all or
nothing. Batches of two dialogues, so repeats cross batch boundaries."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import AuditEvent, Dialogue, Message, Prediction
from annotator.services.imports import corpus_import, corpus_import_file, corpus_parse
from pipeline.corpus import CorpusError, ParseReport
from pipeline.formats.native import parse_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_batches(settings):
    settings.BLINDSPOT_IMPORT_BATCH_DIALOGUES = 2


def _dialogue(did: str, text: str = "Hi Ana!", meta: dict | None = None) -> dict:
    return {"id": did, "meta": meta or {"topic": "fractions"},
            "messages": [{"speaker": "tutor", "text": text, "ts": "16:19",
                          "spans": [{"start": 3, "end": 6, "label": "NAME"}]},
                         {"speaker": "student", "text": "hello"}]}


def _file(tmp_path, *objs, eol: bytes = b"\n", name: str = "c.jsonl"):
    path = tmp_path / name
    path.write_bytes(b"".join(json.dumps(o).encode() + eol for o in objs))
    return path


def _nothing_written():
    assert Dialogue.objects.count() == 0 and Message.objects.count() == 0 and Prediction.objects.count() == 0


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
def test_identical_repeats_are_imported_once_and_counted(project, tmp_path, eol):
    path = _file(tmp_path, _dialogue("a"), _dialogue("b"), _dialogue("a"), _dialogue("c"), _dialogue("b"),
                 _dialogue("a"), eol=eol)
    result = corpus_import_file(project=project, path=path)
    assert sorted(Dialogue.objects.values_list("external_id", flat=True)) == ["a", "b", "c"]
    assert Message.objects.count() == 6
    assert Prediction.objects.count() == 3  # each dialogue's span once, not once per line
    assert (result.dialogues, result.repeats, result.repeats_other_meta) == (3, 3, 0)
    assert result.to_dict()["repeats"] == 3
    event = AuditEvent.objects.get(action="corpus.import")
    assert event.details["repeats"] == 3


def test_a_repeat_with_crlf_in_its_text_is_the_same_dialogue(project, tmp_path):
    """CR LF in a message becomes LF on the way in (spans move with it), so a copy that differs
    only there stores the same text: a repeat, and the stored text is the first line's."""
    crlf = _dialogue("a", text="Hi\r\nAna!")
    crlf["messages"][0]["spans"] = [{"start": 4, "end": 7, "label": "NAME"}]
    result = corpus_import_file(project=project, path=_file(tmp_path, _dialogue("a", text="Hi\nAna!"), crlf))
    assert (result.dialogues, result.repeats, result.normalised) == (1, 1, 0)
    message = Message.objects.get(position=0)
    prediction = Prediction.objects.get()
    assert message.text[prediction.start:prediction.end] == "Ana"


def test_a_repeat_with_other_dialogue_meta_keeps_the_first_and_says_so(project, tmp_path):
    path = _file(tmp_path, _dialogue("a", meta={"z_what": "provide_hint"}),
                 _dialogue("a", meta={"z_what": "ask_question"}), _dialogue("a", meta={"z_what": "provide_hint"}))
    result = corpus_import_file(project=project, path=path)
    assert (result.dialogues, result.repeats, result.repeats_other_meta) == (1, 2, 1)
    assert Dialogue.objects.get().meta == {"z_what": "provide_hint"}


@pytest.mark.parametrize("change", ["text", "speaker", "ts", "span", "anchor", "message meta"])
def test_a_repeated_id_with_other_content_is_an_error_naming_both_lines(project, tmp_path, change):
    other = _dialogue("a")
    message = other["messages"][0]
    if change == "text":
        message["text"] = "Hi Ana?"
    elif change == "speaker":
        message["speaker"] = "teacher"
    elif change == "ts":
        message["ts"] = "16:20"
    elif change == "span":
        message["spans"] = []
    elif change == "anchor":
        other["anchor"] = "Ana has 3 apples."
    else:
        message["meta"] = {"k": 1}
    path = _file(tmp_path, _dialogue("a"), _dialogue("b"), _dialogue("c"), other)
    with pytest.raises(CorpusError) as info:
        corpus_import_file(project=project, path=path, skip_existing=True)
    assert [str(p) for p in info.value.problems] == [
        "line 4: duplicate dialogue id 'a' (first on line 1) with other messages or anchor; "
        "a dialogue may be repeated only identically"]
    _nothing_written()


def test_repeats_of_dialogues_the_project_has_are_skipped_as_existing(project, tmp_path):
    corpus_import_file(project=project, path=_file(tmp_path, _dialogue("a"), name="first.jsonl"))
    path = _file(tmp_path, _dialogue("a"), _dialogue("b"), _dialogue("a"), name="second.jsonl")
    with pytest.raises(CorpusError, match="already exist"):
        corpus_import_file(project=project, path=path)
    result = corpus_import_file(project=project, path=path, skip_existing=True)
    assert (result.dialogues, result.skipped, result.repeats) == (1, ["a"], 1)
    assert Dialogue.objects.count() == 2


def test_the_parsed_path_counts_repeats_too(project):
    raw = b"".join(json.dumps(o).encode() + b"\r\n" for o in (_dialogue("a"), _dialogue("a"), _dialogue("b")))
    report = ParseReport()
    dialogues = corpus_parse(project=project, raw=raw, name="c.jsonl", report=report)
    assert [d.id for d in dialogues] == ["a", "b"]
    assert [(r.dialogue_id, r.line, r.first) for r in report.repeats] == [("a", 2, 1)]
    result = corpus_import(project=project, dialogues=dialogues, source="c.jsonl", repeats=report.repeats)
    assert (result.dialogues, result.repeats) == (2, 1)


def test_parse_jsonl_without_a_report_still_reads_a_repeat_once():
    text = "".join(json.dumps(o) + "\n" for o in (_dialogue("a"), _dialogue("a")))
    assert [d.id for d in parse_jsonl(text)] == ["a"]


def test_the_command_says_how_many_repeats_it_skipped(project, tmp_path, capsys):
    path = _file(tmp_path, _dialogue("a"), _dialogue("a", meta={"other": True}), _dialogue("b"), _dialogue("b"))
    call_command("import_corpus", str(path), project="test")
    out = capsys.readouterr().out
    assert "Imported 2 dialogues" in out
    assert "2 identical duplicates skipped (1 with other dialogue meta: the first line's kept)" in out
    other = _file(tmp_path, _dialogue("x"), _dialogue("x", text="changed"), name="other.jsonl")
    with pytest.raises(CommandError, match=r"line 2: duplicate dialogue id 'x' \(first on line 1\) with other"):
        call_command("import_corpus", str(other), project="test")


def test_the_import_page_reports_the_repeats(client, members, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    raw = b"".join(json.dumps(o).encode() + b"\n" for o in (_dialogue("a"), _dialogue("a"), _dialogue("b")))
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {"file": SimpleUploadedFile("c.jsonl", raw), "spans_as": "run"})
    page = client.get(response["Location"]).content.decode()
    assert "Succeeded" in page
    assert "1 identical duplicate skipped" in page
    assert Dialogue.objects.count() == 2
