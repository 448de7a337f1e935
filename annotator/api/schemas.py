"""The API's request and response bodies (pydantic, through django-ninja): what the OpenAPI
document describes. Values the pages compute (reports, progress, results) pass through as objects."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import Field


class Error(Schema):
    detail: str = Field(description="What was refused, in words.")
    errors: Any = Field(None, description="Per field (a form's) or per item (a schema's), when there are any.")


# what every endpoint may answer besides its success: no token, a role too low, not yours
REFUSALS = {401: Error, 403: Error, 404: Error}


class Progress(Schema):
    done: int
    total: int


class Lifecycle(Schema):
    status: str = Field(description="queued, running, succeeded, failed or cancelled")
    error: str = Field(description="Why it failed (an import lists each problem with its line).")
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    url: str


class JobOut(Lifecycle):
    id: int
    kind: str
    project: str | None
    progress: Progress
    message: str
    result: dict[str, Any]


class RunOut(Lifecycle):
    id: int
    label: str
    detector: str
    source: str
    detector_version: str
    model_version: str
    config: dict[str, Any]
    progress: dict[str, Any] = Field(description="done, total, percent, rate, elapsed, eta (as on the page)")


class RunDetail(RunOut):
    label_counts: list[tuple[str, int]] | None = None
    evaluation: dict[str, Any] | None = None


class FileOut(Schema):
    name: str
    size: int
    sha256: str
    url: str


class ExportOut(Lifecycle):
    id: int
    kind: str
    version: int
    params: dict[str, Any]
    source_run: int | None
    publishable: bool
    published: bool
    progress: Progress
    files: list[FileOut]


class ExportDetail(ExportOut):
    stale: bool
    manifest: dict[str, Any]
    report: dict[str, Any] = Field(description="Leak and utility reports, evidence, residual risk, publication.")
    review: dict[str, int] | None = Field(None, description="The release's review candidates by status.")
    needs_acknowledgement: bool | None = None
    acknowledgement: str | None = Field(None, description="What publishing it as it is acknowledges.")


class ProjectOut(Schema):
    slug: str
    name: str
    role: str


class PlanOut(Schema):
    id: int | None = Field(description="None for a dry run (nothing was written).")
    seed: int
    params: dict[str, Any]
    summary: dict[str, Any]
    created_at: str | None = None
    exposure: dict[str, Any] | None = None


class RunIn(Schema):
    detector: str = Field(description="A preset of the Runs page: rules, presidio vanilla, tagger, ensemble, …")
    config: dict[str, Any] = Field(default_factory=dict, description="Merged over the preset, as on the page.")


class PlanIn(Schema):
    strategy: str = Field(description="flagged, flagged_audit, dialogues or uncertain (as make_assignments)")
    runs: list[int] = Field(default_factory=list)
    annotators: list[str] | None = Field(None, description="Usernames; the project's annotators when left out.")
    k: int | None = Field(None, description="Annotators per item; the project's overlap when left out.")
    seed: int | None = None
    audit_rate: float | None = None
    n_dialogues: int | None = None
    budget: int | None = None
    audit_share: float | None = None
    dry_run: bool = False


class ExportIn(Schema):
    kind: str = Field(description="gold (an export of the gold set) or release (anonymized)")
    test_fraction: float = 0.2
    seed: int = 0
    source: str = Field("gold", description="gold, or run:<id> for a finished run")
    mode: str = "surrogate"
    scope: str = "dialogue"
    use_llm: bool = False
    complete_only: bool = True


class PublishIn(Schema):
    acknowledge: bool = Field(False, description="Needed for an unreviewed release (audited), as on the page.")


class AgreementIn(Schema):
    n_boot: int | None = None


class CircularityIn(Schema):
    run: int
    threshold: float | None = None
    match: str | None = None
    n_boot: int | None = None
