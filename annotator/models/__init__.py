"""Blindspot's data model, one module per area."""

from annotator.models.accounts import Invitation
from annotator.models.adjudication import AdjudicationItem
from annotator.models.annotation import Annotation, Assignment, AssignmentPlan
from annotator.models.api import ApiToken, IdempotencyKey
from annotator.models.audit import AuditEvent
from annotator.models.corpus import Dialogue, Membership, Message, Project, Role
from annotator.models.counters import QueueCount
from annotator.models.exports import Export
from annotator.models.gold import AdjudicationDecision, GoldSpan
from annotator.models.jobs import BackgroundJob, JobFields, JobStatus, UndeliveredTask
from annotator.models.releases import CandidateDecision, ReleaseCandidate, ReleaseChunk
from annotator.models.runs import (
    DetectorRun,
    MessageSegment,
    MessageUncertainty,
    Prediction,
    RunChunk,
)
from annotator.models.webhooks import Webhook, WebhookDelivery, WebhookEvent

__all__ = [
    "AdjudicationDecision",
    "AdjudicationItem",
    "Annotation",
    "ApiToken",
    "Assignment",
    "AssignmentPlan",
    "AuditEvent",
    "BackgroundJob",
    "CandidateDecision",
    "DetectorRun",
    "Dialogue",
    "Export",
    "GoldSpan",
    "IdempotencyKey",
    "Invitation",
    "JobFields",
    "JobStatus",
    "Membership",
    "Message",
    "MessageSegment",
    "MessageUncertainty",
    "Prediction",
    "QueueCount",
    "Project",
    "ReleaseCandidate",
    "ReleaseChunk",
    "Role",
    "RunChunk",
    "UndeliveredTask",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
]
