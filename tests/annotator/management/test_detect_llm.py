"""``detect --detector llm`` against the fake endpoint replaying real replies: the run reports what
it spent and what went wrong, fails past the failed-message threshold, and keeps finished work."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.fake_openai import FakeOpenAI, error, ok, recorded, replay, target_text

# The lines rebuilt one per shape (the verbatim recordings are replayed in tests/pipeline/test_llm.py).
REPLIES = [row for row in recorded(Path(__file__).resolve().parents[2] / "fixtures" / "llm_replies.jsonl")
           if not row["source"].startswith("recorded")]
FAST = {"model": "fake-model", "timeout_s": 2, "max_retries": 1, "backoff_base_s": 0.01,
        "backoff_max_s": 0.02, "jitter": 0.0}


@pytest.fixture
def replies_corpus(tmp_path):
    """The recorded targets, three dialogues of a few messages each."""
    texts = [row["target"] for row in REPLIES]
    path = tmp_path / "corpus.jsonl"
    with path.open("w") as fh:
        for n, start in enumerate(range(0, len(texts), 5)):
            messages = [{"speaker": "Tutor", "text": t} for t in texts[start:start + 5]]
            fh.write(json.dumps({"id": f"d{n}", "messages": messages}) + "\n")
    return path


def _detect(corpus, out, server, capsys, workers="2", **config):
    cfg = {**FAST, "base_url": server.base_url, **config}
    try:
        call_command("detect", str(corpus), "--detector", "llm", "--config", json.dumps(cfg),
                     "--out", str(out), "--workers", workers)
    finally:
        err = capsys.readouterr().err
    return err


def _lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_real_replies_finish_and_report_usage_problems_and_failed_messages(replies_corpus, tmp_path, capsys):
    out = tmp_path / "pred.jsonl"
    with FakeOpenAI(replay(REPLIES)) as server:
        err = _detect(replies_corpus, out, server, capsys, max_failed_share=0.2)
    assert len(_lines(out)) == len(REPLIES)
    assert f"{len(REPLIES)} messages in" in err
    assert "messages/s, 1 process, 2 asked for)" in err  # the LLM runs in one process
    rate = err.split(" messages/s")[0].rsplit("(", 1)[1]
    assert "." in rate  # 0.4, never a 0 rounded down
    assert f"usage: {len(REPLIES) + 4} requests, 0 retries, 4 reasks" in err
    assert "problems: 2 failed_messages, 1 unparsable, 3 truncated, 2 placeholders, 1 unknown_labels" in err
    assert "failed: dialogue d2 message 0: placeholder:" in err
    assert "failed: dialogue d2 message 2: truncated:" in err


def test_more_failed_messages_than_allowed_fail_the_command_with_the_count(replies_corpus, tmp_path, capsys):
    out = tmp_path / "pred.jsonl"
    with FakeOpenAI(replay(REPLIES)) as server, pytest.raises(
            CommandError, match=r"2 of 14 messages \(14\.3%\) got no usable answer.*5\.0% allowed"):
        _detect(replies_corpus, out, server, capsys)
    assert len(_lines(out)) == len(REPLIES)  # what was detected is written all the same


def test_a_late_failure_keeps_the_dialogues_that_finished(replies_corpus, tmp_path, capsys):
    last = REPLIES[-1]["target"]  # the last dialogue's last message

    def handler(request):
        return error(500, "server went away") if target_text(request) == last else ok({"pii": []})

    out = tmp_path / "pred.jsonl"
    with FakeOpenAI(handler) as server, pytest.raises(CommandError, match="failed after 10 messages written"):
        _detect(replies_corpus, out, server, capsys, concurrency=1)
    assert {row["dialogue_id"] for row in _lines(out)} == {"d0", "d1"}
