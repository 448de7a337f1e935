"""Issue 20: deidentify --fail-on-leaks exits non-zero while review candidates remain."""

import pytest
from django.core.management import call_command

from tests.pipeline.test_release_audit import KEY, A, write


@pytest.mark.django_db(databases=[])
def test_deidentify_fail_on_leaks_exits_nonzero_while_candidates_remain(tmp_path, capsys):
    src = write(tmp_path / "in.jsonl", [A])
    with pytest.raises(SystemExit) as exc:
        call_command("deidentify", str(src), "--out", str(tmp_path / "o.jsonl"), "--key", KEY,
                     "--gold", str(src), "--fail-on-leaks")
    assert exc.value.code == 1
    out = capsys.readouterr().out
    assert "review candidates:" in out and "capture-recapture" in out
