"""An import file is read, checked and written a batch at a time, in one transaction, so
the worker's memory is a batch's, and a bad line anywhere still leaves nothing written. The
batch size is two dialogues here, so every file below spans several batches."""

import json

import pytest

from annotator.models import (
    AdjudicationDecision,
    DetectorRun,
    Dialogue,
    GoldSpan,
    Message,
    Prediction,
    RunChunk,
)
from annotator.services import imports
from annotator.services.imports import ExistingDialoguesError, corpus_import_file
from pipeline.corpus import CorpusError

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_batches(settings):
    settings.BLINDSPOT_IMPORT_BATCH_DIALOGUES = 2


def _dialogue(did: str, spans: bool = False) -> dict:
    span = [{"start": 3, "end": 6, "label": "NAME"}] if spans else []
    return {"id": did, "messages": [{"speaker": "Tutor", "text": "Hi Ana!", "spans": span},
                                    {"speaker": "Student", "text": "hello"}]}


def _file(tmp_path, *lines, name="c.jsonl"):
    path = tmp_path / name
    path.write_bytes(b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in lines))
    return path


@pytest.fixture
def batch_sizes(monkeypatch):
    """The size of each batch written, in order."""
    sizes: list[int] = []
    real = imports._create_dialogues

    def spy(project, todo, source):
        sizes.append(len(todo))
        return real(project, todo, source)

    monkeypatch.setattr(imports, "_create_dialogues", spy)
    return sizes


def _nothing_written():
    assert (Dialogue.objects.count(), Message.objects.count(), DetectorRun.objects.count()) == (0, 0, 0)


def test_a_file_is_written_batch_by_batch(project, tmp_path, batch_sizes):
    result = corpus_import_file(project=project, path=_file(tmp_path, *(_dialogue(f"d{i}") for i in range(7))))
    assert batch_sizes == [2, 2, 2, 1]
    assert (result.dialogues, result.messages) == (7, 14)
    assert Message.objects.filter(project=project).count() == 14


def test_a_bad_last_line_undoes_the_batches_already_written(project, tmp_path, batch_sizes):
    """The batches before the bad line were written (the reader had not reached it), and the
    error rolled them back: the file names the line as a whole-file parse did."""
    path = _file(tmp_path, *(_dialogue(f"d{i}") for i in range(6)), b'{"id": "x", "messages": [')
    with pytest.raises(CorpusError) as info:
        corpus_import_file(project=project, path=path)
    assert [p.line for p in info.value.problems] == [7]
    assert "line 7: malformed JSON" in str(info.value)
    assert batch_sizes == [2, 2, 2]
    _nothing_written()


def test_after_a_problem_no_batch_is_written_and_every_problem_is_named(project, tmp_path, batch_sizes):
    path = _file(tmp_path, _dialogue("a"), _dialogue("b"), _dialogue("c"), {"id": "d", "messages": []},
                 *(_dialogue(f"e{i}") for i in range(5)), {"messages": [{"speaker": "T", "text": "hi"}]})
    with pytest.raises(CorpusError) as info:
        corpus_import_file(project=project, path=path)
    assert [p.line for p in info.value.problems] == [4, 10]
    assert batch_sizes == [2]
    _nothing_written()


def test_a_duplicate_id_in_a_later_batch_is_found(project, tmp_path):
    path = _file(tmp_path, _dialogue("a"), _dialogue("b"), _dialogue("c"), _dialogue("d"), _dialogue("a", spans=True))
    with pytest.raises(CorpusError, match=r"line 5: duplicate dialogue id 'a' \(first on line 1\)"):
        corpus_import_file(project=project, path=path)
    _nothing_written()


def test_invalid_utf8_after_the_first_batch_is_the_one_problem_named(project, tmp_path):
    bad = '{"id": "z", "messages": [{"speaker": "T", "text": "caf\xe9"}]}'.encode("latin-1")
    path = _file(tmp_path, {"messages": []}, _dialogue("a"), _dialogue("b"), _dialogue("c"), bad)
    offset = path.read_bytes().index(b"\xe9")
    with pytest.raises(CorpusError) as info:
        corpus_import_file(project=project, path=path)
    assert [str(p) for p in info.value.problems] == [
        f"line 5: not valid UTF-8 (byte {offset}); save the file as UTF-8"]
    _nothing_written()


def test_ids_the_project_has_are_found_in_every_batch(project, tmp_path):
    corpus_import_file(project=project, path=_file(tmp_path, _dialogue("b"), _dialogue("e"), name="first.jsonl"))
    path = _file(tmp_path, *(_dialogue(x) for x in "abcdef"))
    with pytest.raises(ExistingDialoguesError) as info:
        corpus_import_file(project=project, path=path)
    assert info.value.existing == ["b", "e"]
    assert Dialogue.objects.count() == 2
    result = corpus_import_file(project=project, path=path, skip_existing=True)
    assert (result.dialogues, result.skipped) == (4, ["b", "e"])
    assert sorted(Dialogue.objects.values_list("external_id", flat=True)) == list("abcdef")


def test_spans_of_a_later_batch_make_one_run_over_the_whole_import(project, tmp_path):
    path = _file(tmp_path, *(_dialogue(f"d{i}") for i in range(4)), _dialogue("s", spans=True))
    result = corpus_import_file(project=project, path=path)
    run = DetectorRun.objects.get()
    assert (result.run_id, result.spans, run.progress_total, run.progress_done) == (run.pk, 1, 10, 10)
    chunk = RunChunk.objects.get(run=run)
    assert sorted(chunk.dialogue_ids) == sorted(Dialogue.objects.values_list("pk", flat=True))
    assert chunk.message_count == 10
    assert Prediction.objects.get().message.dialogue.external_id == "s"


def test_gold_spans_of_a_later_batch_decide_every_message_of_the_import(project, tmp_path):
    path = _file(tmp_path, *(_dialogue(f"d{i}") for i in range(4)), _dialogue("s", spans=True))
    corpus_import_file(project=project, path=path, spans_as="gold")
    assert AdjudicationDecision.objects.filter(outcome="imported").count() == 10
    assert GoldSpan.objects.get().message.dialogue.external_id == "s"


def test_progress_ends_at_the_messages_written(project, tmp_path):
    seen = []
    corpus_import_file(project=project, path=_file(tmp_path, *(_dialogue(f"d{i}") for i in range(5))),
                       progress=lambda done, total: seen.append((done, total)))
    assert [done for done, _ in seen] == [4, 8, 10]
    assert all(total >= done for done, total in seen) and seen[-1] == (10, 10)
