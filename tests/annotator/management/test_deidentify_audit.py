"""deidentify --fail-on-leaks exits non-zero while review candidates remain; a dialogue
of --gold is released with its gold spans."""

import json

import pytest
from django.core.management import call_command

from tests.pipeline.test_release_audit import KEY, A, write
from tests.pipeline.test_release_gold import miles_corpus


@pytest.mark.django_db(databases=[])
def test_deidentify_fail_on_leaks_exits_nonzero_while_candidates_remain(tmp_path, capsys):
    src = write(tmp_path / "in.jsonl", [A])
    with pytest.raises(SystemExit) as exc:
        call_command("deidentify", str(src), "--out", str(tmp_path / "o.jsonl"), "--key", KEY,
                     "--gold", str(src), "--fail-on-leaks")
    assert exc.value.code == 1
    out = capsys.readouterr().out
    assert "review candidates:" in out and "capture-recapture" in out


@pytest.mark.django_db(databases=[])
def test_deidentify_with_gold_releases_what_the_audit_found_fixed(tmp_path, capsys):
    """The rules detector finds no name; the audit's gold marks "Miles" four times in its lesson."""
    src, gold = miles_corpus(tmp_path)
    out = tmp_path / "o.jsonl"
    call_command("deidentify", str(src), "--out", str(out), "--key", KEY, "--detector", "rules",
                 "--gold", str(gold), "--fail-on-leaks")
    released = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(released) == 3 and not any("Miles" in m["text"] for m in released[1]["messages"])
    assert "residual risk: 4 miss(es) found in 5 reviewed messages (1 dialogue)" in capsys.readouterr().out
