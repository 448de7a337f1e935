"""Reads: the queries pages need, in one place."""

from __future__ import annotations

from django.db.models import Count, Q

from annotator.models import Assignment, BackgroundJob, DetectorRun, Dialogue, Message, Project


def project_counts(project: Project) -> dict[str, int]:
    assignments = Assignment.objects.filter(project=project).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(status=Assignment.Status.DONE))
    )
    return {
        "dialogues": Dialogue.objects.filter(project=project).count(),
        "messages": Message.objects.filter(project=project).count(),
        "runs": DetectorRun.objects.filter(project=project).count(),
        "runs_active": DetectorRun.objects.filter(
            project=project, status__in=[DetectorRun.Status.QUEUED, DetectorRun.Status.RUNNING]
        ).count(),
        "assignments_total": assignments["total"],
        "assignments_done": assignments["done"],
        "gold_messages": Message.objects.filter(project=project, decision__isnull=False).count(),
    }


def recent_jobs(project: Project, limit: int = 5):
    return BackgroundJob.objects.filter(project=project).order_by("-created_at")[:limit]


def dialogue_page(project: Project, *, q: str = "", page: int = 1, per_page: int = 50):
    qs = Dialogue.objects.filter(project=project).annotate(n_messages=Count("messages")).order_by("id")
    if q:
        qs = qs.filter(Q(external_id__icontains=q) | Q(messages__text__icontains=q)).distinct()
    total = qs.count()
    page = max(1, page)
    return list(qs[(page - 1) * per_page: page * per_page]), total


def dialogue_messages(dialogue: Dialogue):
    return list(dialogue.messages.order_by("position"))
