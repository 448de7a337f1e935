"""Reads of the sampling design: how each message came to be labelled, and how the blind/aware
randomization was carried out.

:func:`audit_sample_weights` is *the* accessor for design weights: the circularity report, the
detectors-against-gold report (through :func:`design_weights`, the same figures keyed as the
pipeline keys messages) and the residual-risk estimate of releases all weigh a message by
``1 / inclusion_probability``, read from here. The figures are recorded on each ``Assignment`` by
:func:`annotator.services.assignments.plan_create` (and backfilled for older plans).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from django.db.models import Case, Count, F, FloatField, IntegerField, Max, Q, Sum, Value, When
from django.db.models.functions import Coalesce

from annotator.models import Assignment, AssignmentPlan, Project
from annotator.selectors.figures import cached, figure
from pipeline import assignment as algo

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SampleWeight:
    """One sampled message under the plans' design.

    ``inclusion_probability`` is the probability that the design picked the message: 1 for a
    message a chosen run flagged (or any message of a census), the realised audit share ``r`` for an
    unflagged message drawn into an audit, ``n/N`` for a message of a dialogue sample. ``flagged``
    says whether the plan's runs flagged it (None: the plan used no runs).
    """

    message_id: int
    key: Key  # (dialogue external id, message position), as the pipeline keys messages
    inclusion_probability: float
    flagged: bool | None

    @property
    def weight(self) -> float:
        """The Horvitz–Thompson weight ``1/p``: how many corpus messages this one stands for."""
        return 1.0 / self.inclusion_probability


def audit_sample_weights(project: Project) -> Iterator[tuple[tuple[int, int], SampleWeight]]:
    """Every message any plan sampled, as ``((dialogue pk, position), SampleWeight)`` in dialogue
    order (to merge with other reads in that order, :mod:`annotator.selectors.ordered`).

    Messages that no plan sampled (gold imported with the corpus, for instance) are absent and
    count with weight 1. A message sampled by several plans takes the largest probability (the
    smallest weight) and is flagged when any plan flagged it (None: no plan that drew it used
    runs). Grouped in the database and streamed: a census plan at a million messages has 2
    million assignments, which as a dict of messages took 200 MB.
    """
    flagged = Max(Case(When(flagged=True, then=Value(2)), When(flagged=False, then=Value(1)),
                       default=None, output_field=IntegerField()))  # NULLs aside, any True wins
    rows = (Assignment.objects.filter(project=project)
            .values("message__dialogue_id", "message__position", "message_id", "message__dialogue__external_id")
            .annotate(p=Max(_PROBABILITY), flagged=flagged)
            .order_by("message__dialogue_id", "message__position")
            .values_list("message__dialogue_id", "message__position", "message_id", "message__dialogue__external_id",
                         "p", "flagged"))
    for dpk, pos, mid, did, p, flag in rows.iterator(chunk_size=10_000):
        yield (dpk, pos), SampleWeight(mid, (did, pos), p, None if flag is None else flag == 2)


_PROBABILITY = Case(When(inclusion_probability__gt=0, then=F("inclusion_probability")),  # none or 0 counts as 1
                    default=Value(1.0), output_field=FloatField())


def design_weights(project: Project) -> dict[Key, float]:
    """``(dialogue id, position) -> 1/p`` of every message that weighs other than 1, the form
    :mod:`pipeline.metrics` takes (a message absent weighs 1).

    The probabilities of :func:`audit_sample_weights` (each message's largest over its
    assignments; none or 0 counts as 1), taken in the database: the reports read the audit
    sample's few rows, not a row per assignment (2.75 million at a million messages).
    """
    rows = (Assignment.objects.filter(project=project)
            .values("message__dialogue__external_id", "message__position")
            .annotate(p=Max(_PROBABILITY)).exclude(p=1.0)
            .values_list("message__dialogue__external_id", "message__position", "p"))
    return {(did, pos): 1.0 / p for did, pos, p in rows.iterator(chunk_size=10_000)}


def randomization_unit(project: Project) -> str | None:
    """What the project's randomized plans randomized: ``annotator_dialogue``, ``item`` (plans
    made before the unit was recorded), ``mixed``, or None when no plan was randomized."""
    units = set()
    for params in AssignmentPlan.objects.filter(project=project, assignments__isnull=False).distinct() \
            .values_list("params", flat=True):
        if (params or {}).get("visibility_mode") == algo.RANDOMIZED:
            units.add(plan_condition_unit(params))
    if not units:
        return None
    return units.pop() if len(units) == 1 else "mixed"


def plan_condition_unit(params: Mapping) -> str | None:
    """The unit of randomization of one plan (None when it was not randomized)."""
    if (params or {}).get("visibility_mode") != algo.RANDOMIZED:
        return None
    return params.get("condition_unit") or algo.UNIT_ITEM


@figure
def plan_exposure(project: Project, *, plan_id: int | None = None) -> dict[str, int]:
    """:func:`condition_exposure` of the plan with id ``plan_id`` (None: every assignment), as
    a :func:`~annotator.selectors.figures.figure` a worker computes from ids."""
    plan = AssignmentPlan.objects.get(pk=plan_id, project=project) if plan_id is not None else None
    return condition_exposure(project, plan=plan)


def condition_exposure(project: Project, *, plan: AssignmentPlan | None = None,
                       use_cache: bool = False) -> dict[str, int]:
    """Cross-condition exposure measured on the stored assignments (see
    :func:`pipeline.assignment.cross_condition_exposure`): blind items whose annotator has aware
    items in the same dialogue. With ``plan``, only the (annotator, dialogue) pairs it touched,
    counting every plan's assignments there.

    Counted in the database, one row out: the items grouped by (annotator, dialogue), then the
    groups summed (the same figures as the pure function, without loading every assignment).
    With ``use_cache``, as computed at the project's revision (:mod:`annotator.selectors.figures`)."""
    if use_cache:
        return cached(project, plan_exposure, plan_id=plan.pk if plan is not None else None)
    blind, aware = Q(condition=algo.BLIND), Q(condition=algo.AWARE)
    clusters = (Assignment.objects.filter(project=project, condition__in=(algo.BLIND, algo.AWARE))
                .values("annotator_id", "message__dialogue_id")
                .annotate(n_blind=Count("pk", filter=blind), n_aware=Count("pk", filter=aware)))
    if plan is not None:
        clusters = clusters.annotate(n_plan=Count("pk", filter=Q(plan=plan))).filter(n_plan__gt=0)
    mixed = Q(n_blind__gt=0, n_aware__gt=0)
    out = clusters.aggregate(
        blind=Coalesce(Sum("n_blind"), 0),
        exposed=Coalesce(Sum("n_blind", filter=mixed), 0),
        mixed_clusters=Count("annotator_id", filter=mixed),
        clusters=Count("annotator_id"),
    )
    return {k: int(out[k]) for k in ("blind", "exposed", "mixed_clusters", "clusters")}
