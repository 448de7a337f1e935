"""Writes for who-labels-what: sampling plans and reassignment.

The algorithms live in :mod:`pipeline.assignment` (pure, seeded); this module feeds them rows and
stores what they decide, with the plan's parameters, seed and summary on an ``AssignmentPlan``.
Each ``Assignment`` also records its message's inclusion probability under the plan's design and
whether the plan's runs flagged it (read back by :func:`annotator.selectors.assignments.audit_sample_weights`).
In randomized mode one annotator has one condition per dialogue, across plans and reassignment.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from annotator import task_names as names
from annotator.bulk import insert_rows
from annotator.dispatch import enqueue
from annotator.models import (
    Annotation,
    Assignment,
    AssignmentPlan,
    BackgroundJob,
    DetectorRun,
    Membership,
    Message,
    MessageUncertainty,
    Prediction,
    Project,
    QueueCount,
    Role,
)
from annotator.services import jobs
from annotator.services.audit import audit_record
from pipeline import assignment as algo

UNFINISHED = (Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS, Assignment.Status.SKIPPED)
PENDING = Assignment.Status.PENDING
# A plan's rows, written with COPY (annotator.bulk): 200,000 assignments at 100k messages took
# 49.5 s as bulk_create's model instances and INSERTs.
PLAN_COLUMNS = ("public_id", "project_id", "plan_id", "annotator_id", "message_id", "condition", "status", "order",
                "inclusion_probability", "flagged", "version", "no_pii", "uncertain", "comment", "active_seconds",
                "undo_log", "created_at")


PlanError = algo.PlanError


def project_annotators(project: Project):
    """Members who label: the Annotator role (admins may add themselves explicitly)."""
    User = get_user_model()
    return User.objects.filter(
        memberships__project=project, memberships__role=Role.ANNOTATOR, memberships__active=True
    ).order_by("username")


def plan_create(
    *,
    project: Project,
    strategy: str,
    annotators,
    k: int | None = None,
    seed: int | None = None,
    runs=(),
    audit_rate: float = 0.0,
    n_dialogues: int = 0,
    budget: int = 0,
    audit_share: float = 0.0,
    by=None,
    dry_run: bool = False,
    include_gold: bool = True,
    progress: Callable[[str], None] | None = None,
    job_id: int | None = None,
) -> AssignmentPlan:
    """Sample items, give each to ``k`` distinct annotators and store the queue entries.

    Items that already have annotators count towards their ``k`` and never go to the same person
    twice, so running the same plan again adds nothing. ``progress`` hears each phase's name (a
    plan over 100k messages takes a minute: the web path runs this as a job, :func:`plan_start`).
    The ``uncertain`` strategy ranks by the margins one chosen tagger run stored (``budget``
    messages, ``audit_share`` of them an audit of unflagged ones).
    """
    say = progress or (lambda phase: None)
    annotators = list(annotators)
    say("Checking the annotators and runs")
    k, run_ids = _plan_check(project, strategy, annotators, k, runs)
    seed = random.SystemRandom().randrange(1, 2**31) if seed is None else int(seed)
    say("Reading the candidate messages")
    scored_by = _uncertainty_run(project, run_ids) if strategy == algo.UNCERTAIN else None
    items = _plan_items(project, run_ids, include_gold, scored_by=scored_by)
    say(f"Sampling {len(items):,} messages")
    user_ids = [u.pk for u in annotators]
    existing, load = _plan_existing(project, user_ids)
    result = algo.make_plan(
        items, user_ids, strategy=strategy, k=k, seed=seed, mode=project.visibility_mode,
        audit_rate=audit_rate, n_dialogues=n_dialogues, budget=budget, audit_share=audit_share,
        existing=existing, load=load, fixed=cluster_conditions(project),
    )
    params = {
        "strategy": strategy, "k": k, "runs": run_ids, "audit_rate": audit_rate,
        "n_dialogues": n_dialogues, "budget": budget, "audit_share": audit_share,
    }
    plan = _plan_record(project, result, params, annotators=annotators, include_gold=include_gold,
                        scored_by=scored_by, seed=seed, job_id=job_id, by=by)
    if dry_run:
        return plan
    say(f"Writing {len(result.pairs):,} assignments")
    with transaction.atomic():
        _plan_save(plan, result, run_ids=run_ids, user_ids=user_ids, by=by)
    return plan


def _plan_record(project: Project, result: algo.PlanResult, params: dict, *, annotators: list,
                 include_gold: bool, scored_by: int | None, seed: int, job_id: int | None, by) -> AssignmentPlan:
    """The unsaved plan: ``params`` (the sampling parameters) with the annotators, the project's
    visibility mode and the job that wrote it, and the sampling's summary with annotators named."""
    names = {u.pk: u.username for u in annotators}
    summary = dict(result.summary)
    if scored_by is not None:
        summary["uncertainty_run"] = scored_by
    summary["per_annotator"] = {names[int(a)]: row for a, row in summary["per_annotator"].items()}
    params = {**params, "annotators": sorted(names.values()), "visibility_mode": project.visibility_mode,
              "include_gold": include_gold}
    if project.visibility_mode == algo.RANDOMIZED:
        params["condition_unit"] = algo.UNIT_CLUSTER
    if job_id is not None:
        params["job"] = job_id  # a retried job finds the plan it already wrote
    return AssignmentPlan(project=project, params=params, seed=seed, summary=summary, created_by=by)


def _plan_check(project: Project, strategy: str, annotators: list, k: int | None, runs) -> tuple[int, list[int]]:
    """The plan's annotators are members, ``k`` is possible, its runs belong to the project."""
    if not annotators:
        raise PlanError("Choose at least one annotator.")
    members = set(
        Membership.objects.filter(project=project, user__in=annotators, active=True).values_list("user_id", flat=True)
    )
    outsiders = [u.username for u in annotators if u.pk not in members]
    if outsiders:
        raise PlanError(f"Not members of this project: {', '.join(outsiders)}.")
    k = project.overlap_k if k is None else k
    if k > len(annotators) and not Assignment.objects.filter(project=project).exists():
        raise PlanError(f"Each item needs {k} distinct annotators but only {len(annotators)} were chosen.")
    run_ids = sorted({r.pk if isinstance(r, DetectorRun) else int(r) for r in runs})
    if strategy == algo.UNCERTAIN and not run_ids:
        raise PlanError("The least-sure strategy ranks by a tagger run's scores: choose a tagger run "
                        "(run the tagger over the project first if it has none).")
    if strategy in (algo.FLAGGED, algo.FLAGGED_AUDIT) and not run_ids:
        raise PlanError("Choose at least one detector run whose flagged messages to assign.")
    if run_ids:
        found = set(DetectorRun.objects.filter(project=project, pk__in=run_ids).values_list("pk", flat=True))
        if found != set(run_ids):
            raise PlanError("A chosen run does not belong to this project.")
    if strategy == algo.UNCERTAIN:
        _uncertainty_run(project, run_ids)
    return k, run_ids


def _uncertainty_run(project: Project, run_ids: list[int]) -> int:
    """The one chosen run that stored uncertainty margins (tagger runs do), or a clear error."""
    scored = [r for r in run_ids if MessageUncertainty.objects.filter(run_id=r).exists()]
    if len(scored) == 1:
        return scored[0]
    if scored:
        raise PlanError(f"Choose one tagger run to rank by, not {len(scored)} "
                        f"(runs {', '.join(f'#{r}' for r in scored)} all have scores).")
    taggers = DetectorRun.objects.filter(project=project, pk__in=run_ids, detector="tagger")
    if taggers.exists():
        names = ", ".join(f"#{r.pk}" for r in taggers)
        raise PlanError(f"Tagger run {names} has no uncertainty scores: it was made before runs stored "
                        "them, or has not finished a chunk yet. Run the tagger again and choose that run.")
    raise PlanError("None of the chosen runs is a tagger run, and only the tagger scores how sure it "
                    "was: run the tagger over the project and choose that run.")


def _plan_items(project: Project, run_ids: list[int], include_gold: bool,
                scored_by: int | None = None) -> list[algo.Item]:
    """Every candidate message, flagged when one of the runs predicted a span in it, with its
    margin from run ``scored_by`` (when given)."""
    flagged = set(
        Prediction.objects.filter(run_id__in=run_ids, message__project=project)
        .values_list("message_id", flat=True).distinct()
    ) if run_ids else set()
    margins = dict(
        MessageUncertainty.objects.filter(run_id=scored_by).values_list("message_id", "margin")
    ) if scored_by is not None else {}
    candidates = Message.objects.filter(project=project)
    if not include_gold:  # messages already settled in gold need no more annotators
        candidates = candidates.filter(decision__isnull=True)
    return [
        algo.Item(dialogue_id=d, position=p, message_id=m, flagged=m in flagged, margin=margins.get(m))
        for m, d, p in candidates.values_list("pk", "dialogue_id", "position")
    ]


def _plan_existing(project: Project, user_ids: list[int]) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Who already has each message, and each chosen annotator's current load."""
    existing: dict[int, list[int]] = defaultdict(list)
    for m, a in Assignment.objects.filter(project=project).values_list("message_id", "annotator_id"):
        existing[m].append(a)
    load = dict(
        Assignment.objects.filter(project=project, annotator_id__in=user_ids)
        .values_list("annotator_id").annotate(n=Count("pk")).values_list("annotator_id", "n")
    )
    return existing, load


def _plan_save(plan: AssignmentPlan, result, *, run_ids: list[int], user_ids: list[int], by) -> None:
    """Store the plan and its queue entries, appended to each annotator's queue in dialogue order."""
    project = plan.project
    plan.save()
    if run_ids and not project.suggestion_runs.exists():
        # Aware annotators see the predictions of the project's suggestion runs; a project
        # without any takes the plan's runs (shown in its settings and in the plan summary).
        project.suggestion_runs.add(*run_ids)
        plan.summary["suggestion_runs_set"] = run_ids
        plan.save(update_fields=["summary"])
    next_order = dict(
        Assignment.objects.filter(project=project, annotator_id__in=user_ids)
        .values_list("annotator_id").annotate(m=Max("order")).values_list("annotator_id", "m")
    )
    added: Counter[int] = Counter()
    now = timezone.now()

    def rows():
        for pair in result.pairs:  # already in dialogue order
            a = pair.annotator
            order = next_order.get(a)
            order = 0 if order is None else order + 1
            next_order[a] = order
            added[a] += 1
            yield (uuid.uuid4(), project.pk, plan.pk, a, pair.item.message_id, pair.condition, PENDING, order,
                   result.inclusion.get(pair.item.message_id, 1.0), pair.item.flagged if run_ids else None,
                   0, False, False, "", 0.0, [], now)

    with transaction.atomic():
        insert_rows(Assignment, PLAN_COLUMNS, rows())
        QueueCount.add_many({(project.pk, a): {PENDING: n} for a, n in added.items()})
    audit_record(user=by, action="assignment.plan", obj=plan, project=project,
                 seed=plan.seed, params=plan.params, assignments=sum(added.values()))


# ----------------------------------------------------------------------------------- plan jobs


def plan_start(*, project: Project, by, strategy: str, annotators, k: int | None = None,
               seed: int | None = None, runs=(), audit_rate: float = 0.0, n_dialogues: int = 0,
               budget: int = 0, audit_share: float = 0.0, include_gold: bool = True,
               queue: bool = True) -> BackgroundJob:
    """Check the plan's inputs now (errors belong on the form), then build it as a background
    job with progress (``queue=False``: the caller runs :func:`plan_job_run` itself)."""
    annotators = list(annotators)
    k, run_ids = _plan_check(project, strategy, annotators, k, runs)
    seed = random.SystemRandom().randrange(1, 2**31) if seed is None else int(seed)  # fixed now: a retry redoes the same plan
    job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.PLAN, created_by=by, params={
        "strategy": strategy, "annotators": [u.pk for u in annotators], "k": k, "seed": seed, "runs": run_ids,
        "audit_rate": audit_rate, "n_dialogues": n_dialogues, "budget": budget, "audit_share": audit_share,
        "include_gold": include_gold,
    })
    if queue:
        enqueue(names.WORKSPACE_PLAN_BUILD, job.pk)
    return job


def plan_job_run(job: BackgroundJob) -> AssignmentPlan | None:
    """Build a queued plan. Idempotent: a finished job does nothing, and a retried one whose plan
    was already written finishes with that plan instead of writing assignments twice."""
    if job.is_finished or not jobs.job_start(job):
        return None
    p = job.params
    steps = iter(range(1, 5))
    try:
        with jobs.job_failing(job):
            plan = AssignmentPlan.objects.filter(project=job.project, params__job=job.pk).first()
            if plan is None:
                users = sorted(get_user_model().objects.filter(pk__in=p["annotators"]), key=lambda u: u.pk)
                plan = plan_create(
                    project=job.project, strategy=p["strategy"], annotators=users, k=p["k"], seed=p["seed"],
                    runs=p["runs"], audit_rate=p["audit_rate"], n_dialogues=p["n_dialogues"],
                    budget=p.get("budget", 0), audit_share=p.get("audit_share", 0.0), by=job.created_by,
                    include_gold=p["include_gold"], job_id=job.pk,
                    progress=lambda phase: jobs.job_progress(job, next(steps, 4), 4, phase),
                )
    except PlanError:
        return None  # recorded on the job by job_failing; the user's to fix, not retried
    jobs.job_finish(job, result={"plan_id": plan.pk, "assignments": plan.summary.get("assignments", 0)})
    return plan


def cluster_conditions(project: Project, annotator_ids=None) -> dict[tuple[int, int], str]:
    """(annotator id, dialogue id) -> the condition that annotator already has in that dialogue.

    A pair left mixed by plans made under the old per-item rule counts as aware: the annotator
    has seen suggestions there, so a new blind item would be exposed.
    """
    qs = Assignment.objects.filter(project=project)
    if annotator_ids is not None:
        qs = qs.filter(annotator_id__in=annotator_ids)
    out: dict[tuple[int, int], str] = {}
    for a, d, cond in qs.values_list("annotator_id", "message__dialogue_id", "condition").distinct():
        if out.get((a, d)) != algo.AWARE:
            out[(a, d)] = cond
    return out


def assignments_reassign(
    *, project: Project, from_user, to_users=None, by=None, seed: int = 0
) -> dict:
    """Move ``from_user``'s unfinished items (to do, in progress, skipped) to others.

    ``to_users`` defaults to every other annotator of the project; items go to the least-loaded
    eligible one, never to someone who already has the message. Partial work on a moved item is
    discarded (and audited): the new annotator starts it afresh. Finished items never move. A moved
    item takes the condition its new annotator already has in that dialogue, if any, so nobody
    works blind on a dialogue where they saw suggestions.
    """
    targets = [u for u in (to_users if to_users is not None else project_annotators(project)) if u.pk != from_user.pk]
    if not targets:
        raise PlanError("There is nobody else to give the work to.")
    with transaction.atomic():
        moving = list(
            Assignment.objects.select_for_update()
            .filter(project=project, annotator=from_user, status__in=UNFINISHED).order_by("order")
        )
        if not moving:
            return {"moved": 0, "kept": 0}
        mids = [a.message_id for a in moving]
        target_ids = [u.pk for u in targets]
        decided = _rebalance_plan(project, mids, target_ids, seed)
        next_order = dict(
            Assignment.objects.filter(project=project, annotator_id__in=target_ids)
            .values_list("annotator_id").annotate(m=Max("order")).values_list("annotator_id", "m")
        )
        conditions = cluster_conditions(project, target_ids)
        dialogue_of = dict(Message.objects.filter(pk__in=mids).values_list("pk", "dialogue_id"))
        moved, kept = 0, 0
        per_target: dict[int, int] = defaultdict(int)
        for a in moving:
            to = decided.get(a.message_id)
            if to is None:
                kept += 1
                continue
            dropped = Annotation.objects.filter(assignment=a).delete()[0]
            order = next_order.get(to)
            next_order[to] = order = 0 if order is None else order + 1
            _hand_over(a, to, order, conditions.setdefault((to, dialogue_of[a.message_id]), a.condition))
            per_target[to] += 1
            moved += 1
            if dropped:
                audit_record(user=by, action="assignment.reassign_dropped", obj=a, project=project,
                             from_user=from_user.username, annotations=dropped)
        names = {u.pk: u.username for u in targets}
        summary = {"moved": moved, "kept": kept, "to": {names[t]: n for t, n in per_target.items()}}
        audit_record(user=by, action="assignment.reassign", obj=project, project=project,
                     from_user=from_user.username, **summary)
    return summary


def _rebalance_plan(project: Project, mids: list[int], target_ids: list[int], seed: int) -> dict[int, int]:
    """Message id -> the target annotator it moves to, given who already has each message and
    each target's unfinished load (messages nobody eligible can take are left out)."""
    existing: dict[int, list[int]] = defaultdict(list)
    for m, a in Assignment.objects.filter(project=project, message_id__in=mids).values_list("message_id", "annotator_id"):
        existing[m].append(a)
    load = dict(
        Assignment.objects.filter(project=project, annotator_id__in=target_ids, status__in=UNFINISHED)
        .values_list("annotator_id").annotate(n=Count("pk")).values_list("annotator_id", "n")
    )
    return algo.rebalance(mids, target_ids, seed=seed, existing=existing, load=load)


def _hand_over(a: Assignment, to: int, order: int, condition: str) -> None:
    """Give ``a`` to annotator ``to`` as a fresh, pending item at ``order`` under ``condition``."""
    a.annotator_id = to
    a.order = order
    a.condition = condition
    a.status = Assignment.Status.PENDING
    a.version += 1
    a.no_pii = a.uncertain = False
    a.comment = ""
    a.undo_log = []
    a.active_seconds = 0
    a.started_at = a.submitted_at = None
    a.save()
