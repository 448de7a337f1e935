"""Geometry for the report charts, drawn as inline SVG by templates (no JavaScript library).

Functions return plain dicts of coordinates; ``templates/reports/_bars.html`` and
``_heatmap.html`` only place them.
"""

from __future__ import annotations

from collections.abc import Sequence


def _num(x) -> float | None:
    return None if x is None else float(x)


def bar_chart(rows: Sequence[dict], *, width: int = 640, bar: int = 22, gap: int = 8,
              label_width: int = 150, lo: float | None = None, hi: float = 1.0) -> dict:
    """Horizontal bars with confidence whiskers. ``rows``: ``{"label", "value", "ci_low",
    "ci_high", "n"}``; the axis runs from ``lo`` (default: min(0, lowest whisker)) to ``hi``.

    Optional keys: ``heading`` (consecutive rows with the same heading sit under it, so a
    label's pairs or a run's precision and recall read together) and ``series`` (a small integer
    that picks the bar's class, ``bar s<series>``; every bar also carries its own text label, so
    colour is never the only cue)."""
    values = [v for r in rows for v in (_num(r.get("value")), _num(r.get("ci_low"))) if v is not None]
    if lo is None:
        lo = min([0.0, *values])
        lo = -1.0 if lo < -0.5 else (-0.5 if lo < 0 else 0.0)
    plot = width - label_width - 60
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return round(label_width + plot * (min(max(v, lo), hi) - lo) / span, 1)

    out, headings = [], []
    y, group = 4, object()
    for r in rows:
        if r.get("heading") is not None and r["heading"] != group:
            group = r["heading"]
            headings.append({"label": group, "y": y + bar / 2 + 4})
            y += bar
        series = r.get("series")
        v, cl, ch = _num(r.get("value")), _num(r.get("ci_low")), _num(r.get("ci_high"))
        item = {"label": r["label"], "heading": r.get("heading"), "y": y, "mid": y + bar / 2, "text_y": y + bar / 2 + 4,
                "cls": "bar" if series is None else f"bar s{int(series)}",
                "value": v, "ci_low": cl, "ci_high": ch, "n": r.get("n")}
        y += bar + gap
        if v is not None:
            x0, x1 = sorted((x(0.0 if lo <= 0 else lo), x(v)))
            item.update(x=x0, w=max(round(x1 - x0, 1), 1), value_x=x(max(v, ch or v)) + 6)
        if cl is not None and ch is not None:
            item.update(wx1=x(cl), wx2=x(ch))
        out.append(item)
    ticks = []
    t = lo
    while t <= hi + 1e-9:
        ticks.append({"x": x(t), "label": f"{t:g}"})
        t = round(t + (0.25 if span <= 1.25 else 0.5), 2)
    height = y + 24
    return {"width": width, "height": height, "bar": bar, "bars": out, "headings": headings, "ticks": ticks,
            "axis_y": height - 20, "zero_x": x(0.0) if lo < 0 else None, "label_width": label_width}


def _color(v: float | None) -> str:
    """White (0 or below) to deep blue (1)."""
    if v is None:
        return "#f3f4f6"
    t = max(0.0, min(1.0, v))
    r, g, b = (int(255 - t * (255 - c)) for c in (29, 78, 216))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(names: Sequence[str], values: dict[tuple[str, str], float | None], *, cell: int = 56,
            label_width: int = 90) -> dict:
    """A symmetric annotator-by-annotator matrix (pairwise kappa), diagonal left blank."""
    cells = []
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            v = None if a == b else values.get((a, b), values.get((b, a)))
            cells.append({"x": label_width + j * cell, "y": 24 + i * cell, "v": v,
                          "text": "" if v is None else f"{v:.2f}", "fill": _color(v) if a != b else "#fff",
                          "dark": v is not None and v > 0.6, "a": a, "b": b})
    return {"cells": cells, "cell": cell, "size": label_width + cell * len(names) + 4,
            "height": 24 + cell * len(names) + 4,
            "cols": [{"x": label_width + j * cell + cell / 2, "name": n} for j, n in enumerate(names)],
            "rows": [{"y": 24 + i * cell + cell / 2 + 4, "name": n} for i, n in enumerate(names)],
            "label_width": label_width}


def kappa_by_label(figures: Sequence[dict]) -> list[dict]:
    """Rows for :func:`bar_chart`: pairwise Cohen's κ per label (typed tokens), one group per
    label and one bar per annotator pair, the pair's place in the report as its series."""
    kappas = [f for f in figures if f.get("metric") == "cohen_kappa" and f.get("by") == "label"
              and f.get("scheme", "typed") == "typed"]
    pairs = list(dict.fromkeys(f["pair"] for f in kappas))
    labels = list(dict.fromkeys(f["group"] for f in kappas))
    rows = []
    for label in labels:
        for f in kappas:
            if f["group"] == label:
                rows.append({**f, "heading": label, "label": f["pair"].replace("~", " – "),
                             "series": pairs.index(f["pair"]) % 4})
    return rows


PR_SERIES = (("precision", "precision", 0), ("recall", "recall", 1))


def detector_precision_recall(runs: Sequence[dict], *, level: str = "span_exact") -> list[dict]:
    """Rows for :func:`bar_chart`: each scored run's overall precision and recall at ``level``
    with their intervals, one group per run (runs that failed to score are left out)."""
    rows = []
    for run in runs:
        overall = next((r for r in run.get("rows", []) if r["level"] == level and r["label"] == "ALL"), None)
        if overall is None:
            continue
        group = f"{run['name']} {run['version']}" if run.get("version") else run["name"]
        for key, name, series in PR_SERIES:
            rows.append({**overall[key], "label": name, "heading": group, "series": series,
                         "n": overall["n_pred" if key == "precision" else "n_gold"]})
    return rows


CURVE_SERIES = (("f2", "dev F2", "#1e3a8a", ""), ("name_recall", "name recall", "#9a3412", "5 3"))


def learning_curve(points: Sequence[dict], *, width: int = 640, height: int = 260) -> dict:
    """A line chart of the tagger's learning curve: dev F2 and name recall (0 to 1) against the
    gold messages each version was trained with, one point per version. ``points``: dicts with
    ``gold_messages``, ``f2``, ``name_recall`` (may be None), ``decision`` and ``version``; a
    version that became active is a filled point, any other a hollow one (and says so in its
    tooltip, so colour is never the only cue)."""
    left, right, top, bottom = 44, 16, 12, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [float(p["gold_messages"]) for p in points]
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if hi - lo < 1:
        lo, hi = lo - 1, hi + 1

    pad = 12  # points at either end stay clear of the axis labels

    def x(v: float) -> float:
        return round(left + pad + (plot_w - 2 * pad) * (v - lo) / (hi - lo), 1)

    def y(v: float) -> float:
        return round(top + plot_h * (1 - min(max(v, 0.0), 1.0)), 1)

    series = []
    for key, label, colour, dash in CURVE_SERIES:
        dots = [{"x": x(float(p["gold_messages"])), "y": y(float(p[key])), "value": p[key],
                 "gold": p["gold_messages"], "version": p.get("version", ""),
                 "decision": p.get("decision") or "", "filled": p.get("decision") == "activated"}
                for p in points if p.get(key) is not None]
        series.append({"key": key, "label": label, "colour": colour, "dash": dash, "dots": dots,
                       "path": " ".join(f"{d['x']},{d['y']}" for d in dots)})
    step = max(1, round((hi - lo) / 4))
    x_ticks, t = [], lo
    while t <= hi + 1e-9:
        x_ticks.append({"x": x(t), "label": f"{t:g}"})
        t += step
    return {"width": width, "height": height, "series": series, "left": left, "right": width - right,
            "top": top, "axis_y": top + plot_h, "x_ticks": x_ticks,
            "y_ticks": [{"y": y(v), "label": f"{v:g}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
            "legend": [{"label": s["label"], "colour": s["colour"], "dash": s["dash"],
                        "x": left + 8 + 130 * i} for i, s in enumerate(series)]}
