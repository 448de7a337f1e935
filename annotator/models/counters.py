"""Counts kept beside the rows they count, so a page never counts a corpus table.

:class:`QueueCount` holds one annotator's assignments in one project by status. Counting them
(the queue's pager and progress, the dashboard's per-annotator and project totals) read every
assignment of the annotator: 13,000 rows each at 20k messages, 700,000 at a million. The counter
moves in the transaction of the write that moves an assignment, by ``F()`` (an ``UPDATE`` that
takes the counter's row lock, so concurrent submits add up exactly):

- ``Assignment.save`` re-reads the stored row under ``select_for_update`` and moves one unit from
  the stored (project, annotator, status) to the new one (a submit, a skip, a reopen, a
  reassignment, an edit in the Django admin);
- a plan, which writes its rows with ``COPY``, adds them per annotator (:meth:`QueueCount.add_many`);
- a deleted assignment (itself, or with its message, dialogue or plan's project) is taken off by
  the ``post_delete`` receiver below; when the project or the annotator is what is deleted, the
  counters go with it (their foreign keys cascade) and nothing is taken off.

A write that goes around the ORM (raw SQL, ``COPY``, a ``QuerySet.update`` of ``status``) must
call :meth:`QueueCount.recount` for the project; the migration that made the table recounted once.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Count, F
from django.db.models.signals import post_delete
from django.dispatch import receiver

STATUSES = ("pending", "in_progress", "done", "skipped")  # Assignment.Status's values, one column each


class QueueCount(models.Model):
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    pending = models.IntegerField(default=0)
    in_progress = models.IntegerField(default=0)
    done = models.IntegerField(default=0)
    skipped = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "annotator"], name="queue_count_once")]

    def __str__(self) -> str:
        return f"{self.annotator_id} in {self.project_id}: {self.total} assignments"

    @property
    def total(self) -> int:
        return sum(getattr(self, s) for s in STATUSES)

    @classmethod
    def add(cls, project_id: int, annotator_id: int, deltas: dict[str, int]) -> None:
        """Move the counters of (project, annotator) by ``deltas`` (status -> n), creating the row
        on first use (a concurrent creator loses the race to the unique constraint and adds)."""
        deltas = {s: n for s, n in deltas.items() if n}
        if not deltas:
            return
        mine = cls.objects.filter(project_id=project_id, annotator_id=annotator_id)
        if mine.update(**{s: F(s) + n for s, n in deltas.items()}):
            return
        try:
            with transaction.atomic():
                cls.objects.create(project_id=project_id, annotator_id=annotator_id, **deltas)
        except IntegrityError:
            mine.update(**{s: F(s) + n for s, n in deltas.items()})

    @classmethod
    def add_many(cls, deltas: Mapping[tuple[int, int], Mapping[str, int]]) -> None:
        """Move many counters at once: ``(project, annotator) -> {status: n}`` (a plan's new rows)."""
        for (project_id, annotator_id), moves in sorted(deltas.items()):  # one lock order for all writers
            cls.add(project_id, annotator_id, dict(moves))

    @classmethod
    def recount(cls, project_id: int) -> None:
        """Count the project's assignments again (a scan: for a migration or a bulk load only)."""
        Assignment = cls._meta.apps.get_model("annotator", "Assignment")  # noqa: N806 (its module imports this one)
        with transaction.atomic():
            cls.objects.filter(project_id=project_id).delete()
            per: dict[int, dict[str, int]] = {}
            for annotator_id, status, n in (Assignment.objects.filter(project_id=project_id).order_by()
                                            .values_list("annotator_id", "status").annotate(n=Count("pk"))):
                per.setdefault(annotator_id, {})[status] = n
            cls.objects.bulk_create(cls(project_id=project_id, annotator_id=a, **c) for a, c in per.items())


def moved(assignment, stored: tuple[int, int, str] | None) -> None:
    """Count ``assignment`` (just saved) where it now is, and off ``stored`` (project, annotator,
    status as it was in the database; None for a new row)."""
    now = (assignment.project_id, assignment.annotator_id, assignment.status)
    if stored == now:
        return
    if stored is not None:
        QueueCount.add(stored[0], stored[1], {stored[2]: -1})
    QueueCount.add(now[0], now[1], {now[2]: 1})


@receiver(post_delete, sender="annotator.Assignment", dispatch_uid="queue_count_delete")
def _assignment_deleted(sender, instance, origin=None, **kwargs) -> None:
    from annotator.models.corpus import Project

    if isinstance(origin, (Project, sender.annotator.field.related_model)):
        return  # the project's or the annotator's counters are deleted with them
    if isinstance(origin, models.QuerySet) and origin.model in (Project, sender.annotator.field.related_model):
        return
    QueueCount.add(instance.project_id, instance.annotator_id, {instance.status: -1})
