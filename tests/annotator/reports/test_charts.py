"""Report charts: per-label pairwise kappa and per-detector precision/recall.

The SVG on the page is parsed: one bar per figure, each bar's length, whiskers and printed value
from the cached report, a <title>/<desc>, no inline style, and the same numbers in a table.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from annotator import charts


def svg_by_id(page: str, chart_id: str) -> ET.Element:
    """The <svg> whose <title> has ``chart_id``, parsed as XML (the template must write well-formed SVG)."""
    for m in re.finditer(r"<svg\b.*?</svg>", page, re.S):
        if f'id="{chart_id}-title"' in m.group(0):
            return ET.fromstring(m.group(0))
    raise AssertionError(f"no chart {chart_id} on the page")


def bars(svg: ET.Element) -> list[dict]:
    out = []
    for g in svg.iter("g"):
        title = g.find("title").text
        rect = g.find("rect")
        label = g.find("text[@class='lbl']").text
        val = g.find("text[@class='val']")
        whiskers = [ln for ln in g.findall("line") if ln.get("class") == "whisker"]
        out.append({"title": title, "label": label, "rect": rect, "val": val.text if val is not None else None,
                    "whiskers": whiskers})
    return out


def test_bar_chart_groups_rows_and_places_values():
    rows = [{"label": "p", "heading": "A", "series": 0, "value": 0.5, "ci_low": 0.25, "ci_high": 0.75},
            {"label": "r", "heading": "A", "series": 1, "value": 1.0, "ci_low": 0.8, "ci_high": 1.0},
            {"label": "p", "heading": "B", "series": 0, "value": None, "ci_low": None, "ci_high": None}]
    c = charts.bar_chart(rows, lo=0.0, width=560, label_width=100)  # plot 400 wide from x=100
    assert [h["label"] for h in c["headings"]] == ["A", "B"]
    a, b, none = c["bars"]
    assert (a["x"], a["w"], a["wx1"], a["wx2"]) == (100, 200, 200, 400)
    assert (b["w"], b["cls"], a["cls"]) == (400, "bar s1", "bar s0")
    assert "w" not in none and b["y"] > a["y"] and none["y"] > b["y"] + c["bar"]  # B's heading sits between
    assert c["height"] > none["y"] + c["bar"]


def test_kappa_rows_one_bar_per_label_and_pair():
    figs = [{"metric": "cohen_kappa", "by": "label", "scheme": "typed", "pair": p, "group": g, "value": v,
             "ci_low": v - .1, "ci_high": v + .1, "n": 10}
            for g, v0 in (("NAME", .8), ("EMAIL", .4)) for p, v in (("a~b", v0), ("a~c", v0 - .2))]
    figs.append({"metric": "cohen_kappa", "by": "all", "scheme": "typed", "pair": "a~b", "group": "all", "value": .7})
    figs.append({"metric": "krippendorff_alpha", "by": "label", "scheme": "typed", "pair": "*", "group": "NAME",
                 "value": .7})
    rows = charts.kappa_by_label(figs)
    assert [(r["heading"], r["label"], r["series"], r["value"]) for r in rows] == [
        ("NAME", "a – b", 0, .8), ("NAME", "a – c", 1, pytest.approx(.6)),
        ("EMAIL", "a – b", 0, .4), ("EMAIL", "a – c", 1, pytest.approx(.2))]


def test_agreement_page_charts_pairwise_kappa_per_label(client, members, computed):
    client.force_login(members["adjudicator"])
    figures = client.get("/p/test/reports/agreement.json").json()["figures"]
    want = [f for f in figures if f["metric"] == "cohen_kappa" and f["by"] == "label" and f["scheme"] == "typed"]
    assert want, "the study fixture has per-label kappa figures"
    page = client.get("/p/test/reports/agreement/").content.decode()
    svg = svg_by_id(page, "chart-kappa-label")
    assert svg.find("title").text and svg.find("desc").text
    assert svg.get("aria-labelledby") == "chart-kappa-label-title chart-kappa-label-desc"
    got = bars(svg)
    assert len(got) == len(want)
    headings = [t.text for t in svg.findall("text[@class='grp']")]
    assert headings == list(dict.fromkeys(f["group"] for f in want))
    for b, f in zip(got, sorted(want, key=lambda f: headings.index(f["group"])), strict=True):
        assert b["label"] == f["pair"].replace("~", " – ")
        assert b["title"].startswith(f"{f['group']}, {b['label']}: ")
        if f["value"] is None:
            assert b["rect"] is None and b["val"] is None
            continue
        assert b["val"] == f"{f['value']:.2f}"
        assert f"{f['value']:.3f}" in b["title"]
        if f["ci_low"] is not None:
            assert len(b["whiskers"]) == 3
            assert f"[{f['ci_low']:.3f}, {f['ci_high']:.3f}]" in b["title"]
    # the numbers are in a table too
    table = page[page.index('id="per-label"'):]
    table = table[:table.index("</table>")]
    for f in want:
        if f["value"] is not None:
            assert f"{f['value']:.3f}" in table
    assert "style=" not in page and "<script>" not in page
    # the ungrouped charts stay ungrouped (their figures' own "group" field is no heading)
    assert svg_by_id(page, "chart-alpha-label").findall("text[@class='grp']") == []


def test_detectors_page_charts_precision_and_recall_per_run(client, members, computed):
    client.force_login(members["adjudicator"])
    runs = client.get("/p/test/reports/detectors.json").json()
    scored = [r for r in runs if any(x["level"] == "span_exact" and x["label"] == "ALL" for x in r.get("rows", []))]
    assert scored
    page = client.get("/p/test/reports/detectors/").content.decode()
    svg = svg_by_id(page, "chart-detector-pr")
    got = bars(svg)
    assert len(got) == 2 * len(scored)
    assert [b["label"] for b in got] == ["precision", "recall"] * len(scored)
    assert [t.text for t in svg.findall("text[@class='grp']")][0].startswith(scored[0]["name"])
    scale = charts.bar_chart([{"label": "x", "value": 1.0}], lo=0.0, label_width=170)["bars"][0]["w"]
    for i, run in enumerate(scored):
        overall = next(x for x in run["rows"] if x["level"] == "span_exact" and x["label"] == "ALL")
        for b, key in zip(got[2 * i:2 * i + 2], ("precision", "recall"), strict=True):
            f = overall[key]
            if f["value"] is None:
                assert b["rect"] is None
                continue
            assert b["val"] == f"{f['value']:.2f}"
            assert float(b["rect"].get("width")) == pytest.approx(max(scale * f["value"], 1), abs=0.2)
            assert b["rect"].get("class") == ("bar s0" if key == "precision" else "bar s1")
    assert "style=" not in page


def test_no_chart_without_a_report(client, members, model_project):
    client.force_login(members["adjudicator"])
    for url in ("/p/test/reports/agreement/", "/p/test/reports/detectors/"):
        assert "<svg" not in client.get(url).content.decode()
