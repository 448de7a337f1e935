"""Reads of projects: the dashboard counts, the dialogue list and one transcript, and the
project's pseudonyms for its members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, F, OuterRef, Q, Sum

from annotator.models import (
    BackgroundJob,
    DetectorRun,
    Dialogue,
    GoldSpan,
    Membership,
    Message,
    MessageSegment,
    Prediction,
    Project,
    QueueCount,
)
from annotator.rendering import Mark, highlight, taxonomy_colors
from annotator.selectors import page_of
from annotator.selectors.figures import cached, figure


def project_counts(project: Project, *, use_cache: bool = False) -> dict[str, int]:
    """The dashboard's counts. Runs are always counted now (a handful of rows, and a run's status
    moves without an audit event); with ``use_cache`` the corpus-wide counts are those computed at
    the project's revision (:mod:`annotator.selectors.figures`)."""
    runs = DetectorRun.objects.filter(project=project).aggregate(
        runs=Count("pk"),
        runs_active=Count("pk", filter=Q(status__in=[DetectorRun.Status.QUEUED, DetectorRun.Status.RUNNING])),
    )
    return {**corpus_counts(project, use_cache=use_cache), **runs}


@figure
def corpus_counts(project: Project, *, use_cache: bool = False) -> dict[str, int]:
    """Dialogues, messages, assignments (all and done) and messages with gold."""
    if use_cache:
        return cached(project, corpus_counts)
    # assignments from the annotators' counters (annotator.models.counters): a row per annotator
    assignments = QueueCount.objects.filter(project=project).aggregate(
        total=Sum(F("pending") + F("in_progress") + F("done") + F("skipped")), done=Sum("done"))
    corpus = Dialogue.objects.filter(project=project).aggregate(n=Count("pk"), messages=Sum("message_count"))
    return {  # messages from the dialogues' counters: a dialogue row per ~30 messages, not the message table
        "dialogues": corpus["n"],
        "messages": corpus["messages"] or 0,
        "assignments_total": assignments["total"] or 0,
        "assignments_done": assignments["done"] or 0,
        "gold_messages": Message.objects.filter(project=project, decision__isnull=False).count(),
    }


def recent_jobs(project: Project, limit: int = 5):
    return BackgroundJob.objects.filter(project=project).order_by("-created_at")[:limit]


def dialogue_page(project: Project, *, q: str = "", page: int = 1, per_page: int = 50):
    """A page of the project's dialogues with their message counts (the dialogues' counters: the page
    and its count read no message); ``q`` matches the dialogue id or any message's text, an
    ``EXISTS``, not a join, which would multiply the dialogues by their matching messages."""
    qs = Dialogue.objects.filter(project=project).annotate(n_messages=F("message_count")).order_by("id")
    if q:
        matching = Message.objects.filter(dialogue=OuterRef("pk"), text__icontains=q)
        qs = qs.filter(Q(external_id__icontains=q) | Exists(matching))
    return page_of(qs, page, per_page)


def dialogue_messages(dialogue: Dialogue):
    return list(dialogue.messages.order_by("position"))


def message_window(message: Message, size: int) -> list[Message]:
    """``message`` among its neighbours, ``size`` messages in all (the project's context window),
    in order: the workspace, adjudication and the release review show a message in the same
    context, so a decision on it is taken on what the annotator saw."""
    half = max(size, 1) // 2
    return list(
        Message.objects.filter(dialogue_id=message.dialogue_id, position__gte=max(0, message.position - half),
                               position__lte=message.position + half)
        .only("pk", "position", "speaker", "speaker_role", "text", "ts").order_by("position")
    )


def segment_run(project: Project) -> DetectorRun | None:
    """The project's segment run: the newest finished run that labelled MATH / NON-MATH segments.
    The one rule transcripts, evaluation and the reports use to find it."""
    has_segments = Exists(MessageSegment.objects.filter(run=OuterRef("pk")))
    return (
        DetectorRun.objects.filter(has_segments, project=project, status=DetectorRun.Status.SUCCEEDED)
        .order_by("-created_at", "-pk").first()
    )


def dialogue_view(dialogue: Dialogue, *, run: DetectorRun | None = None, with_segments: bool = False) -> dict:
    """Rows of (message, highlighted gold html, highlighted prediction html, segment) for a transcript."""
    colors = taxonomy_colors(dialogue.project.taxonomy)
    messages = dialogue_messages(dialogue)
    ids = [m.pk for m in messages]
    gold: dict[int, list[Mark]] = {}
    for g in GoldSpan.objects.filter(message_id__in=ids).values("message_id", "start", "end", "label"):
        gold.setdefault(g["message_id"], []).append(Mark(g["start"], g["end"], g["label"], "gold"))
    pred: dict[int, list[Mark]] = {}
    if run is not None:
        for p in Prediction.objects.filter(run=run, message_id__in=ids).values("message_id", "start", "end", "label"):
            pred.setdefault(p["message_id"], []).append(Mark(p["start"], p["end"], p["label"], "suggestion"))
    segments: dict[int, str] = {}
    seg_run = segment_run(dialogue.project) if with_segments else None
    if seg_run is not None:
        segments = dict(MessageSegment.objects.filter(run=seg_run, message_id__in=ids)
                        .values_list("message_id", "segment"))
    rows = [{
        "message": m,
        "gold": highlight(m.text, gold.get(m.pk, []), colors),
        "pred": highlight(m.text, pred[m.pk], colors) if m.pk in pred else None,
        "segment": segments.get(m.pk),
    } for m in messages]
    return {"rows": rows, "segment_run": seg_run}


def pseudonym_key(project: Project) -> list[tuple[str, str]]:
    """(pseudonym, username) of every member, in pseudonym order: the key to the names reports and
    exports use. Only the project's admins may see it (``{% pseudonym_key %}`` checks)."""
    names = pseudonyms(project)
    users = dict(Membership.objects.filter(project=project).values_list("user_id", "user__username"))
    return sorted((names[uid], users[uid]) for uid in names)


def pseudonyms(project: Project) -> dict[int, str]:
    """user id -> the project's pseudonym for them (never the username)."""
    out = {}
    for uid, pseudo, pk in Membership.objects.filter(project=project).values_list(
        "user_id", "pseudonym", "pk"
    ):
        out[uid] = pseudo or f"A{pk:02d}"
    return out


def project_people(project: Project):
    """The People page's rows: current members first (by role, then name), then removed ones."""
    return (Membership.objects.filter(project=project).select_related("user")
            .order_by("-active", "role", "user__username"))


def active_members(project: Project):
    """The project's current members as users, by name (who a plan or a reassignment may name)."""
    return get_user_model().objects.filter(memberships__project=project, memberships__active=True).order_by("username")
