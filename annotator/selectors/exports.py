"""Reads of exports and releases: whether one is stale, i.e. whether the gold it was built from
has changed since.

Staleness is derived from the gold tables, never from a flag somebody must remember to set: an
export records :func:`gold_state` when it is built, and it is stale when the same fingerprint,
taken now over the decisions that existed then, differs. Every way gold changes shows in it:

- a decision revised by an adjudicator (its ``decided_at`` moves on);
- a decision removed, when a re-submitted item is merged again (the count drops; its gold
  spans go with it);
- a decided item back in the adjudication queue, changed after the decision (counted).

- a place confirmed as PII in a release review (counted): every later build adds its span, so
  a release built before it still holds that PII.

Gold spans are otherwise only ever written together with their decision, so the decisions stand
for them. New gold for messages that had none does not make an export stale: the export is older,
not wrong. Fingerprints are compared on the keys the export recorded, so an older build is not
stale merely because a newer Blindspot fingerprints more.
"""

from __future__ import annotations

from django.db.models import Count, Max

from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    CandidateDecision,
    Export,
    Project,
)
from annotator.selectors.figures import cached, figure


@figure
def gold_state(project: Project, *, upto: int | None = None) -> dict:
    """A fingerprint of the project's gold decisions up to decision id ``upto`` (default: all)."""
    decisions = AdjudicationDecision.objects.filter(message__project=project)
    if upto is None:
        upto = decisions.aggregate(last=Max("pk"))["last"] or 0
    agg = decisions.filter(pk__lte=upto).aggregate(n=Count("pk"), last=Max("decided_at"))
    reopened = AdjudicationItem.objects.filter(
        project=project, status=AdjudicationItem.Status.OPEN, decision__isnull=False, decision_id__lte=upto,
    ).count()
    confirmed = CandidateDecision.objects.filter(project=project, verdict=CandidateDecision.Verdict.CONFIRMED).count()
    return {"upto": upto, "decisions": agg["n"], "decided_at": agg["last"].isoformat() if agg["last"] else None,
            "reopened": reopened, "confirmed_in_review": confirmed}


def _differs(now: dict, then: dict) -> bool:
    return any(now.get(k) != v for k, v in then.items())


def gold_state_cached(project: Project, *, upto: int | None = None) -> dict:
    """:func:`gold_state` for pages, cached per project revision (every change to gold records an
    audit event; :mod:`annotator.selectors.figures`). Builds record the uncached one."""
    return cached(project, gold_state, upto=upto)


def export_is_stale(export: Export) -> bool:
    """Has the gold this export (or release of the gold set) was built from changed since?"""
    state = export.gold_state or {}
    if not export.uses_gold or "upto" not in state:
        return False
    return _differs(gold_state(export.project, upto=state["upto"]), state)


def stale_export_ids(exports, *, use_cache: bool = False) -> set[int]:
    """The ids among ``exports`` that are stale (one fingerprint per distinct build state; with
    ``use_cache``, the fingerprints taken at the project's revision)."""
    out: set[int] = set()
    seen: dict[tuple, dict] = {}
    for export in exports:
        state = export.gold_state or {}
        if not export.uses_gold or "upto" not in state:
            continue
        key = (export.project_id, state["upto"])
        if key not in seen:
            seen[key] = (gold_state_cached if use_cache else gold_state)(export.project, upto=state["upto"])
        if _differs(seen[key], state):
            out.add(export.pk)
    return out
