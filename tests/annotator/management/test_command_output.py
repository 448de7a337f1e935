"""What the commands print: a refused re-import names ``--skip-existing`` and no
"line 0", an empty speaker can be given a name with ``--default-speaker``, ``train_tagger`` shows
its progress and warns about a tiny dev set, ``make_assignments`` prints a table (``--json`` for
scripts) and ``segments_grid`` explains its columns."""

from __future__ import annotations

import json
import logging
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import Message
from annotator.services.imports import ExistingDialoguesError, corpus_import_file
from tests.conftest import SMALL_CORPUS


def run(name: str, *args, **opts) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err, **opts)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in SMALL_CORPUS))
    return path


# --- import_corpus ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_refused_reimport_names_the_commands_flag_and_no_line(project, corpus_file):
    run("import_corpus", str(corpus_file), project="test")
    with pytest.raises(CommandError) as caught:
        run("import_corpus", str(corpus_file), project="test")
    message = str(caught.value)
    assert message == ("2 dialogue id(s) already exist in project test: d1, d2. Nothing was imported; "
                       "run again with --skip-existing to add only the new dialogues.")
    out, _ = run("import_corpus", str(corpus_file), project="test", skip_existing=True)
    assert "skipped 2 existing" in out


@pytest.mark.django_db
def test_the_upload_page_is_told_of_its_checkbox(project, corpus_file):
    corpus_import_file(project=project, path=corpus_file)
    with pytest.raises(ExistingDialoguesError) as caught:
        corpus_import_file(project=project, path=corpus_file)
    assert "line 0" not in str(caught.value) and "--skip-existing" not in str(caught.value)
    assert str(caught.value).endswith('Nothing was imported; tick "Skip existing" on the import form to add only '
                                      "the new dialogues.")


@pytest.fixture
def no_speaker(tmp_path):
    path = tmp_path / "speakers.jsonl"
    dialogue = {"id": "s1", "messages": [{"speaker": "", "text": "hello"}, {"text": "no speaker key"},
                                         {"speaker": "Tutor", "text": "hi"}]}
    path.write_text(json.dumps(dialogue) + "\n")
    return path


@pytest.mark.django_db
def test_an_empty_speaker_is_refused_with_the_option_to_name_one(project, no_speaker):
    with pytest.raises(CommandError) as caught:
        run("import_corpus", str(no_speaker), project="test")
    assert "message 0: missing or empty 'speaker'" in str(caught.value)
    assert "--default-speaker NAME (e.g. --default-speaker unknown)" in str(caught.value)
    assert not Message.objects.exists()


@pytest.mark.django_db
def test_default_speaker_names_them_before_the_file_is_checked(project, no_speaker, tmp_path):
    out, _ = run("import_corpus", str(no_speaker), project="test", default_speaker="unknown")
    assert "Imported 1 dialogues, 3 messages" in out
    assert list(Message.objects.order_by("position").values_list("speaker", flat=True)) == [
        "unknown", "unknown", "Tutor"]
    csv_file = tmp_path / "speakers.csv"
    csv_file.write_text("dialogue_id,seq,speaker,text\nc1,0,,hello\nc1,1,Student,hi\n")
    run("import_corpus", str(csv_file), project="test", default_speaker="Tutor")
    assert list(Message.objects.filter(dialogue__external_id="c1").order_by("position")
                .values_list("speaker", "speaker_role")) == [("Tutor", "tutor"), ("Student", "student")]
    with pytest.raises(CommandError, match="--default-speaker takes a name"):
        run("import_corpus", str(no_speaker), project="test", default_speaker="  ")


# --- train_tagger -----------------------------------------------------------------------------


def _fake_training(dev_dialogues: int):
    """A training that reports two epochs of four steps each and returns a version's facts."""

    def train(**kw):
        progress = kw["progress"]
        for step in range(1, 9):
            progress(step, 8, f"epoch {1 + (step - 1) // 4}/2, loss {1 / step:.4f}")
            if step % 4 == 0:
                progress(step, 8, f"epoch {step // 4}: scoring dev")
        progress(8, 8, "saving")
        return SimpleNamespace(
            full_version="test/20260101-000000-aaaa", training_seconds=3.0, distilled_from="", dev_metrics={},
            data={"train": {"dialogues": 12, "messages": 140, "spans": 30},
                  "dev": {"dialogues": dev_dialogues, "messages": 30, "spans": 6}},
            training={}, onnx={}, activation={}, student={})

    return train


@pytest.mark.django_db
def test_train_tagger_shows_each_epoch_and_warns_of_a_tiny_dev_set(project, monkeypatch):
    from annotator.management.commands import train_tagger as command

    monkeypatch.setattr(command, "tagger_train", _fake_training(3))
    monkeypatch.setattr(command, "version_blockers", lambda info: [])
    out, err = run("train_tagger", project="test", synthetic=3)
    lines = out.splitlines()
    assert "  1/8 steps  epoch 1/2, loss 1.0000" in lines
    assert "  4/8 steps  epoch 1: scoring dev" in lines and "  5/8 steps  epoch 2/2, loss 0.2000" in lines
    assert "  8/8 steps  saving" in lines
    assert len([line for line in lines if "steps" in line]) <= 12  # a line per phase and tenth, not per batch
    assert "Warning: the dev set has only 3 dialogues (under 10)" in err and "--dev-jsonl PATH" in err
    assert ("Trained test/20260101-000000-aaaa in 3s on 12 dialogues (140 messages, 30 spans), dev 3 dialogues"
            in out) and "{" not in out


@pytest.mark.django_db
def test_train_tagger_says_nothing_of_a_dev_set_of_ten(project, monkeypatch):
    from annotator.management.commands import train_tagger as command

    monkeypatch.setattr(command, "tagger_train", _fake_training(10))
    monkeypatch.setattr(command, "version_blockers", lambda info: [])
    _, err = run("train_tagger", project="test", synthetic=3)
    assert "Warning" not in err


# --- make_assignments -------------------------------------------------------------------------


@pytest.mark.django_db
def test_make_assignments_dry_run_prints_a_table_and_json_on_request(members, ws_project, run):
    args = {"project": "test", "strategy": "flagged", "runs": str(run.pk), "k": 2, "seed": 5, "dry_run": True}
    out, _ = _cmd("make_assignments", **args)
    lines = out.splitlines()
    assert lines[0] == "Dry run, nothing written: seed 5"
    assert "{" not in out and '"' not in out
    rows = dict(line.strip().split("  ", 1) for line in lines[1:] if "  " in line.strip())
    assert rows["Strategy"].strip().startswith("flagged, k = 2, 2 annotator(s)")
    assert rows["Flagged"].strip() == "4" and rows["Assignments"].strip() == "8"
    assert any(line.split() == ["annotator", "items", "blind", "aware"] for line in lines)
    assert any(line.split()[:2] == ["annotator", "4"] for line in lines)
    out, _ = _cmd("make_assignments", **args, as_json=True)
    summary = json.loads(out.split("\n", 1)[1])
    assert (summary["assignments"], summary["flagged"]) == (8, 4)


def _cmd(name, **opts):  # ``run`` is the fixture here
    out, err = StringIO(), StringIO()
    call_command(name, stdout=out, stderr=err, **opts)
    return out.getvalue(), err.getvalue()


# --- segments_grid ----------------------------------------------------------------------------


def test_segments_grid_explains_its_columns(corpus_file, tmp_path):
    pred = tmp_path / "pred.jsonl"
    call_command("detect", str(corpus_file), detector="rules", out=str(pred), stdout=StringIO())
    out, _ = run("segments_grid", str(corpus_file), predictions=str(pred), t_anchor="0.1", t_sim="0.5",
                 config='{"embed": false}')
    table, legend = out.split("\nColumns:\n")
    assert table.splitlines()[0].split()[:2] == ["T_anchor", "T_sim"]
    for column in ("T_anchor", "T_sim", "MATH msgs", "FP in MATH", "PII in MATH", "FP:PII MATH", "FP:PII NON-MATH"):
        assert f"  {column}  " in legend
    assert "Good thresholds" in legend


# --- build_release (any command that queues a job without a broker) ----------------------------


def test_the_in_process_broker_names_its_host_so_kombu_does_not_warn(caplog):
    """Without a broker an eager task still takes a producer from the pool, and a "memory://" URL
    made kombu print "No hostname was supplied. Reverting to default 'localhost'" on every
    build_release; the setting names the host the in-memory transport ignores anyway."""
    from kombu import Connection

    from annotator.settings import IN_PROCESS_BROKER

    with caplog.at_level(logging.WARNING, logger="kombu.connection"):
        Connection("memory://").info()
        assert "No hostname was supplied" in caplog.text  # the check can fail
        caplog.clear()
        info = Connection(IN_PROCESS_BROKER).info()
    assert "No hostname" not in caplog.text and info["transport"] == "memory"
