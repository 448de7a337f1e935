from __future__ import annotations

from typing import Any

from annotator.models import AuditEvent


def audit_record(*, user, action: str, obj=None, project=None, **details: Any) -> AuditEvent:
    """Append one audit event; ``obj`` names the object touched (its model and primary key)."""
    return AuditEvent.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        project=project if project is not None else getattr(obj, "project", None),
        action=action,
        object_type=type(obj).__name__ if obj is not None else "",
        object_id=str(getattr(obj, "pk", "") or "") if obj is not None else "",
        details=details,
    )
