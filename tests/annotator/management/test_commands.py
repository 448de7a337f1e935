import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import SMALL_CORPUS


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in SMALL_CORPUS))
    return path


def test_detect_writes_one_line_per_message_without_a_database(corpus_file, tmp_path):
    out = tmp_path / "pred.jsonl"
    call_command("detect", str(corpus_file), detector="rules", out=str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["dialogue_id"], r["index"]) for r in rows] == [
        ("d1", 0), ("d1", 1), ("d1", 2), ("d1", 3), ("d2", 0), ("d2", 1)]
    email = rows[2]["spans"]
    assert [(s["start"], s["end"], s["label"]) for s in email] == [(12, 35, "EMAIL")]
    assert (email[0]["score"], email[0]["source"]) == (0.99, "rules:email")  # the e-mail rule's score
    assert rows[4]["spans"] == []  # "divide 4815162342 by 2" is maths


def test_detect_reports_bad_requests(corpus_file, tmp_path):
    with pytest.raises(CommandError, match="unknown detector 'nope'"):
        call_command("detect", str(corpus_file), detector="nope", out=str(tmp_path / "x"))
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("detect", str(corpus_file), detector="rules", config="{", out=str(tmp_path / "x"))
    with pytest.raises(CommandError, match="No such file"):
        call_command("detect", str(tmp_path / "missing.jsonl"), detector="rules", out=str(tmp_path / "x"))


def test_evaluate_scores_against_gold_in_the_corpus(corpus_file, tmp_path, capsys):
    pred = tmp_path / "pred.jsonl"
    call_command("detect", str(corpus_file), detector="rules", out=str(pred))
    report = tmp_path / "report.json"
    call_command("evaluate", str(pred), gold=str(corpus_file), n_boot=50, json_out=str(report))
    data = json.loads(report.read_text())
    # gold: NAME "Maria" and the e-mail; rules find only the e-mail
    assert data["span_exact"]["tp"] == 1 and data["span_exact"]["fn"] == 1 and data["span_exact"]["fp"] == 0
    assert data["span_exact"]["precision"] == 1.0 and data["span_exact"]["recall"] == 0.5
    assert "span exact" in capsys.readouterr().out


def test_evaluate_needs_texts_for_per_message_gold(corpus_file, tmp_path):
    pred = tmp_path / "pred.jsonl"
    call_command("detect", str(corpus_file), detector="rules", out=str(pred))
    with pytest.raises(CommandError, match="pass the corpus file"):
        call_command("evaluate", str(pred), gold=str(pred))
    call_command("evaluate", str(pred), gold=str(pred), corpus=str(corpus_file), n_boot=10)


def test_segments_grid_prints_one_row_per_threshold_pair(corpus_file, tmp_path):
    pred = tmp_path / "pred.jsonl"
    call_command("detect", str(corpus_file), detector="rules", out=str(pred))
    out = tmp_path / "grid.csv"
    call_command("segments_grid", str(corpus_file), predictions=str(pred), t_anchor="0.1,0.3",
                 t_sim="0.5", csv_out=str(out))
    lines = out.read_text().splitlines()
    assert lines[0].startswith("t_anchor,t_sim,") and len(lines) == 3
