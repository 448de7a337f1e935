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
    "ci_high", "n"}``; the axis runs from ``lo`` (default: min(0, lowest whisker)) to ``hi``."""
    values = [v for r in rows for v in (_num(r.get("value")), _num(r.get("ci_low"))) if v is not None]
    if lo is None:
        lo = min([0.0, *values])
        lo = -1.0 if lo < -0.5 else (-0.5 if lo < 0 else 0.0)
    plot = width - label_width - 60
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return round(label_width + plot * (min(max(v, lo), hi) - lo) / span, 1)

    out = []
    for i, r in enumerate(rows):
        y = i * (bar + gap) + 4
        v, cl, ch = _num(r.get("value")), _num(r.get("ci_low")), _num(r.get("ci_high"))
        item = {"label": r["label"], "y": y, "mid": y + bar / 2, "text_y": y + bar / 2 + 4,
                "value": v, "ci_low": cl, "ci_high": ch, "n": r.get("n")}
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
    height = len(rows) * (bar + gap) + 28
    return {"width": width, "height": height, "bar": bar, "bars": out, "ticks": ticks,
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
