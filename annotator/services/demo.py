"""The demo's finished first round: simulated annotators label part of the queue through the same
services the workspace views call, an adjudicator settles most disagreements, and the reports and
one release are computed, so every page of the demo project shows content.

The annotators follow :func:`pipeline.simulate.simulate_item` with known rates, including an
anchoring bias when aware (they accept a wrong model suggestion with a known probability), so the
circularity report has a real inflation to find. Everything is seeded. Each step is skipped when
its result is already there, so running the demo setup twice changes nothing.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping

from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    Assignment,
    BackgroundJob,
    DetectorRun,
    Export,
    Prediction,
    Project,
    ReleaseCandidate,
)
from annotator.selectors.workspace import pending_suggestions
from annotator.services import releases
from annotator.services import workspace as ws
from annotator.services.adjudication import adjudication_submit, gold_merge_ready
from annotator.services.exports import ExportError
from annotator.services.release_review import ReviewConflict, candidate_decide
from annotator.services.releases import release_start, surrogate_key
from annotator.services.reports import (
    agreement_job_run,
    agreement_request,
    circularity_job_run,
    circularity_request,
)
from pipeline.simulate import SimulatedAnnotator, simulate_item
from pipeline.types import Span

Key = tuple[str, int]  # (dialogue external id, message position)
REPORT_BOOT = 200  # bootstrap resamples of the demo's reports: intervals in a second, not a minute


def round_simulate(*, project: Project, truth: Mapping[Key, tuple[Span, ...]],
                   profiles: Mapping[int, SimulatedAnnotator], dialogues: int, messages: int | None = None,
                   seed: int = 0) -> dict[str, int]:
    """Finish every assignment of the first ``messages`` messages (default: all) of the first
    ``dialogues`` queued dialogues (by id), so that each of those messages has all its annotations; each annotator
    acts by their profile (keyed by user id) on the item's true spans, through the workspace
    services. Does nothing if any assignment of the project is already finished."""
    if Assignment.objects.filter(project=project, status=Assignment.Status.DONE).exists():
        return {"submitted": 0}
    dialogue_ids = list(Assignment.objects.filter(project=project).order_by("message__dialogue_id")
                        .values_list("message__dialogue_id", flat=True).distinct()[:dialogues])
    todo = Assignment.objects.filter(project=project, message__dialogue_id__in=dialogue_ids,
                                     annotator_id__in=list(profiles))
    if messages is not None:
        todo = todo.filter(message__position__lt=messages)
    items = list(todo
                 .select_related("project", "message", "message__dialogue", "annotator")
                 .order_by("message__dialogue_id", "message__position", "annotator_id"))
    runs = list(project.suggestion_runs.values_list("pk", flat=True))
    model: dict[int, list[Span]] = defaultdict(list)
    for mid, s, e, lab in (Prediction.objects.filter(run_id__in=runs, message__dialogue_id__in=dialogue_ids)
                           .values_list("message_id", "start", "end", "label")):
        if Span(s, e, lab) not in model[mid]:
            model[mid].append(Span(s, e, lab))
    rng = random.Random(seed)
    counts = {"submitted": 0, "accepted": 0, "rejected": 0, "added": 0, "no_pii": 0}
    for a in items:
        counts = _label_one(a, truth.get((a.message.dialogue.external_id, a.message.position), ()),
                            tuple(model.get(a.message_id, ())), profiles[a.annotator_id], rng, counts)
    return counts


def _label_one(a: Assignment, truth, model, profile, rng, counts) -> dict[str, int]:
    user = a.annotator
    ws.item_open(assignment=a)
    aware = a.condition == Assignment.Condition.AWARE
    shown = {(p.start, p.end, p.label): p.pk for p in pending_suggestions(a)} if aware else {}
    acts = simulate_item(profile, truth=tuple(truth), aware=aware, rng=rng,
                         predictions=tuple(Span(*k) for k in shown) if aware else model)
    for s in acts.accept:
        ws.suggestion_accept(assignment=a, user=user, version=a.version, prediction_id=shown[s.key()])
    for s in acts.reject:
        ws.suggestion_reject(assignment=a, user=user, version=a.version, prediction_id=shown[s.key()])
    for s in acts.add:
        ws.span_add(assignment=a, user=user, version=a.version, start=s.start, end=s.end, label=s.label,
                    exact=True)
    if not acts.spans:
        ws.item_no_pii_set(assignment=a, user=user, version=a.version, value=True)
    ws.item_submit(assignment=a, user=user, version=a.version)
    counts["submitted"] += 1
    counts["accepted"] += len(acts.accept)
    counts["rejected"] += len(acts.reject)
    counts["added"] += len(acts.add)
    counts["no_pii"] += not acts.spans
    return counts


def adjudicate_all_but(*, project: Project, user, truth: Mapping[Key, tuple[Span, ...]],
                       keep_open: int) -> dict[str, int]:
    """Merge finished items into gold, then settle the queue with the true spans, least risky
    first, until ``keep_open`` disagreements are left for the adjudicator (the riskiest, which the
    queue shows first)."""
    merged = gold_merge_ready(project=project, user=user)
    settled = 0
    open_items = AdjudicationItem.objects.filter(project=project, status=AdjudicationItem.Status.OPEN)
    ranked = list(open_items.select_related("message", "message__dialogue")
                  .order_by("risk", "risk_weight", "-message__dialogue_id", "-message__position"))
    for item in ranked[:max(len(ranked) - keep_open, 0)]:
        gold = truth.get((item.message.dialogue.external_id, item.message.position), ())
        adjudication_submit(item=item, user=user, spans=[s.key() for s in gold], version=item.version,
                            notes="Settled by the demo setup with the corpus's true spans.", confirm_drop=True)
        settled += 1
    # Submits may have merged most items already (their merge job runs at once without a broker).
    auto = AdjudicationDecision.objects.filter(message__project=project, outcome__in=[
        AdjudicationDecision.Outcome.UNANIMOUS, AdjudicationDecision.Outcome.MAJORITY]).count()
    return {**merged, "merged": auto, "settled": settled, "open": open_items.count()}


def reports_compute(*, project: Project, user, run: DetectorRun) -> list[BackgroundJob]:
    """The agreement report (with detectors against gold) and the circularity check of ``run``,
    through the report jobs, run here unless a finished one exists."""
    kinds = BackgroundJob.Kind
    out = []
    for kind, request, job_run in (
        (kinds.AGREEMENT, lambda: agreement_request(project=project, user=user, n_boot=REPORT_BOOT),
         agreement_job_run),
        (kinds.CIRCULARITY, lambda: circularity_request(project=project, user=user, run=run, n_boot=REPORT_BOOT),
         circularity_job_run),
    ):
        job = project.jobs.filter(kind=kind, status=BackgroundJob.Status.SUCCEEDED).first()
        if job is None:
            job = request()
            job.refresh_from_db()
            job_run(job=job)  # without a broker the request may already have run it: then a no-op
            job.refresh_from_db()
        out.append(job)
    return out


def release_build(*, project: Project, user) -> Export | None:
    """One release of the gold set, as ``build_release`` queues it, built here unless one exists."""
    release = project.exports.filter(kind=Export.Kind.RELEASE).first()
    if release is None:
        try:
            surrogate_key("surrogate")
            mode = "surrogate"
        except ExportError:
            mode = "tag"  # no surrogate key configured: a release with <NAME> tags still shows the page
        release = _release_here(project=project, user=user, mode=mode)
    return release


def _release_here(*, project: Project, user, mode: str) -> Export:
    """A new release of the gold set, built here by the export job ("already built" if the request ran it)."""
    release = release_start(project=project, user=user, source="gold", mode=mode)
    releases.release_build(export_id=release.pk)
    release.refresh_from_db()
    return release


def release_review_settle(*, project: Project, user, truth: Mapping[Key, tuple[Span, ...]],
                          rounds: int = 3) -> dict[str, int]:
    """Settle the newest release's review queue with the true spans, as an adjudicator would on the
    Review page: a candidate that overlaps a true span is confirmed (with that span's label), and
    one outside the messages (a lesson's metadata e-mail) too; any other is dismissed. Confirmations make the release stale, so a new version is built and its
    queue settled in turn (a confirmed full name can surface its parts elsewhere), at most
    ``rounds`` times; what is left waits in the queue."""
    counts = {"confirmed": 0, "dismissed": 0, "builds": 0}
    release = project.exports.filter(kind=Export.Kind.RELEASE).order_by("-version").first()
    for _ in range(rounds):
        if release is None or release.status != Export.Status.SUCCEEDED:
            break
        pending = (ReleaseCandidate.objects.filter(export=release, status=ReleaseCandidate.Status.PENDING)
                   .select_related("message", "message__dialogue").order_by("pk"))
        confirmed = 0
        for cand in pending:
            true = truth.get((cand.message.dialogue.external_id, cand.message.position), ())
            hit = next((s for s in true if s.start < cand.end and cand.start < s.end), None)
            if cand.field:  # outside the messages: the generator writes only people into metadata strings
                hit = Span(cand.start, cand.end, cand.label)
            try:
                candidate_decide(candidate_id=cand.pk, export=release, user=user,
                                 verdict="confirmed" if hit else "dismissed", label=hit.label if hit else None)
            except ReviewConflict:  # settled with the same place in another release
                continue
            confirmed += hit is not None
            counts["confirmed" if hit else "dismissed"] += 1
        if not confirmed:
            break
        release = _release_here(project=project, user=user, mode=release.params.get("mode", "tag"))
        counts["builds"] += 1
    return counts
