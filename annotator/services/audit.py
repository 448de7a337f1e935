"""The audit trail's writes: every audited action appends one ``AuditEvent``."""

from __future__ import annotations

from typing import Any

from annotator.models import AuditEvent


def audit_event(*, user, action: str, obj=None, project=None, **details: Any) -> AuditEvent:
    """One unsaved audit event (for ``bulk_create``); ``obj`` names the object touched (its model
    and primary key), and the project defaults to the object's."""
    return AuditEvent(
        user=user if getattr(user, "is_authenticated", False) else None,
        project=project if project is not None else getattr(obj, "project", None),
        action=action,
        object_type=type(obj).__name__ if obj is not None else "",
        object_id=str(getattr(obj, "pk", "") or "") if obj is not None else "",
        details=details,
    )


def audit_record(*, user, action: str, obj=None, project=None, **details: Any) -> AuditEvent:
    """Append one audit event (:func:`audit_event`, saved)."""
    event = audit_event(user=user, action=action, obj=obj, project=project, **details)
    event.save(force_insert=True)
    return event
