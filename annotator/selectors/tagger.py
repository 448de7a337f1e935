"""Reads of the tagger area: a project's saved versions and what blocks each, its retrain
decisions and learning curve, the jobs open, and the one-line summaries the Tagger page shows.

Versions are read from the model-version registry (:mod:`annotator.model_store`); on an object
store each is a download of its ``tagger.json``, so a page reads them once and passes them on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotator import model_store, storage
from annotator.models import AdjudicationDecision, BackgroundJob, JobStatus, Project
from annotator.selectors.exports import gold_state_cached
from pipeline.tagger import ModelNotFoundError, activation_blockers
from pipeline.tagger.backends import cached_choice, candidates
from pipeline.tagger.onnx_export import outdated_export
from pipeline.tagger.retrain import learning_point
from pipeline.tagger.store import gold_free, metric_name

RETRAIN = BackgroundJob.Kind.RETRAIN
TRAIN = BackgroundJob.Kind.TRAIN
UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING)  # a job still to finish


def tagger_versions(project: Project) -> list:
    """The project's saved versions, newest first (from the model store: annotator/model_store.py)."""
    return sorted(model_store.model_infos(project.slug), key=lambda i: i.version, reverse=True)


def stored_info(version: str):
    """The ``ModelInfo`` of a stored version, or ``None`` when there is none (or it is unreadable)."""
    try:
        return model_store.model_info(version)
    except (ModelNotFoundError, storage.StorageError, ValueError, KeyError, TypeError):
        return None


def shared(info) -> bool:
    """Whether ``info`` may run in any project: trained on generated dialogues only, itself and the
    version it was distilled or warm-started from (:func:`pipeline.tagger.store.gold_free`). A
    version trained on a project's gold stays in that project: it can repeat that gold's names."""
    return gold_free(info, stored_info)


@dataclass(frozen=True)
class ProjectTagger:
    """Which model a project's tagger runs and where it came from, for runs and for people.

    ``source``: ``project`` (a version of its own, made active), ``shared`` (another project's
    version trained on generated dialogues only, made active here), ``default`` (nothing active:
    the deployment's default version, itself generated-only) or ``none`` (``version`` empty and
    ``note`` says why and what to do)."""

    version: str
    source: str
    note: str

    def __bool__(self) -> bool:
        return bool(self.version)


def project_tagger(project: Project) -> ProjectTagger:
    """The version ``project``'s tagger runs: its active version, else the deployment's default
    version (``manage.py tagger_activate VERSION --default``; the demo and the first training
    publish theirs) where that carries no project's gold (:func:`shared`), so that a new project
    starts with the day-one model until it trains its own; else none, saying why."""
    active = project.active_tagger
    if active:
        if active.split("/")[0] == project.slug:
            return ProjectTagger(active, "project", "this project's own version, made active here")
        return ProjectTagger(active, "shared", "a version trained on generated dialogues only (no project's "
                                               "gold), made active here")
    try:
        default = model_store.model_default()
    except storage.StorageError as exc:
        return ProjectTagger("", "none", f"the deployment's default version cannot be read ({exc})")
    if not default:
        return ProjectTagger("", "none", "the deployment has no default version")
    info = stored_info(default)
    own = default.split("/")[0] == project.slug
    shown = f" {default}" if own or (info is not None and shared(info)) else ""  # another project's name: not here
    if info is None:
        return ProjectTagger("", "none", f"the deployment's default version{shown} is missing")
    blockers = activation_blockers(info)
    if blockers:
        return ProjectTagger("", "none", f"the deployment's default version{shown} cannot run: {'; '.join(blockers)}")
    if own:
        return ProjectTagger(default, "default", "the deployment's default version, one of this project's own")
    if not shown:
        return ProjectTagger("", "none", "the deployment's default version was trained on another project's gold, "
                                         "which stays in that project")
    return ProjectTagger(default, "default", "the deployment's default version, trained on generated dialogues "
                                             "only (no project's gold), until this project trains its own")


def runtime_note(version: str) -> str:
    """Which runtime ``version`` runs on with ``backend: auto`` on this machine and why, from the
    measurement its first load cached (``pipeline.tagger.backends``); a page never measures."""
    info = stored_info(version) if version else None
    if info is None:
        return ""
    note = _choice_note(info)
    outdated = outdated_export(info)
    return f"{note}; {outdated}" if outdated else note


def _choice_note(info) -> str:
    """The cached choice's reason, or what the first run will time (the candidates are only
    listed when nothing is cached)."""
    chosen = cached_choice(info)
    if chosen is not None:
        return chosen["reason"]
    names = [c.name for c in candidates(info)]
    if len(names) == 1:
        return f"{names[0]}: the only verified runtime"
    return (f"not measured on this machine yet: its first run times {', '.join(names)} and keeps the one that "
            "spends the least CPU, start-up included")


def version_blockers(info) -> list[str]:
    """Why ``info`` (a ModelInfo) may not become active; empty when it may."""
    return activation_blockers(info)


def usable_versions(project: Project) -> list:
    """The project's versions that may become active, newest first."""
    return [v for v in tagger_versions(project) if not version_blockers(v)]


def gold_size(project: Project) -> int:
    """Messages of ``project`` with a gold decision: what ``retrain_every`` counts."""
    return AdjudicationDecision.objects.filter(message__project=project).count()


def gold_size_cached(project: Project) -> int:
    """:func:`gold_size` for the Tagger page: the decisions of the gold fingerprint, cached per
    project revision (the count joins every decision to the project's messages: about 60 ms per
    request at 100k messages, ten times that at a million)."""
    return gold_state_cached(project)["decisions"]


def open_retrain(project: Project) -> BackgroundJob | None:
    """The project's retrain that is queued or running, if any (at most one: a constraint)."""
    return BackgroundJob.objects.filter(project=project, kind=RETRAIN, status__in=UNFINISHED).first()


def open_training(project: Project) -> BackgroundJob | None:
    """The project's training job (not a distillation) that is queued or running, if any."""
    return BackgroundJob.objects.filter(
        project=project, kind=TRAIN, status__in=UNFINISHED
    ).exclude(params__has_key="distill_from").first()


def open_distillation(project: Project) -> BackgroundJob | None:
    """The project's distillation job that is queued or running, if any."""
    return BackgroundJob.objects.filter(
        project=project, kind=TRAIN, status__in=UNFINISHED, params__has_key="distill_from"
    ).first()


def version_rows(project: Project, infos: list | None = None) -> list[dict[str, Any]]:
    """The Tagger page's rows: each version with its blockers and its retrain decision."""
    rows = []
    for info in tagger_versions(project) if infos is None else infos:
        blockers = version_blockers(info)
        act = info.activation or {}
        rows.append(
            {
                "info": info,
                "blockers": blockers,
                "decision": act.get("decision"),
                "reason": act.get("reason", ""),
                "compared_with": act.get("compared_with"),
                "active": info.full_version == project.active_tagger,
            }
        )
    return rows


def learning_curve(project: Project, infos: list | None = None) -> list[dict[str, Any]]:
    """One point per version scored on the project's dev split, by gold size."""
    points = []
    for info in tagger_versions(project) if infos is None else infos:
        point = learning_point(info.activation or {})
        if point is not None:
            points.append({**point, "version": info.version})
    return sorted(points, key=lambda p: (p["gold_messages"], p["version"]))


def distil_refusal(info, blockers: list[str]) -> str:
    """Why the page offers no student of ``info`` (a ModelInfo with its activation ``blockers``);
    empty when it does: a student is compared with its teacher on the teacher's dev dialogues,
    and distilling a student or a version that may not run gives nothing worth having."""
    if info.distilled_from:
        return "it is itself a distilled student"
    if blockers:
        return f"it cannot become active ({'; '.join(blockers)})"
    if not info.dev_ids:
        return "it recorded no dev dialogue ids (trained before they were recorded), so a student could not be checked against it"
    return ""


def dev_summary(info) -> str:
    """One line for people: the dev F2 of each policy (the full metrics stay in tagger.json)."""
    metrics = info.dev_metrics or {}
    parts = [f"{metrics[p]['f2']:.3f} ({p.replace('_', ' ')})" for p in ("recall_first", "strict")
             if isinstance(metrics.get(p), dict) and metrics[p].get("f2") is not None]
    return ("dev F2 " + ", ".join(parts)) if parts else "no dev metrics"


def distillation_summary(info) -> str:
    """One line for people on a distilled student's check against its teacher on dev
    (``hyper.distillation.check``), saying whose dev dialogues those were; empty for a version
    that was not distilled."""
    distillation = (info.hyper or {}).get("distillation")
    if distillation is None:
        return ""
    check = distillation.get("check")
    if not check:
        return "not checked against its teacher on dev"
    figures = ", ".join(
        f"{metric_name(k)} {check['student'][k]:.3f} vs {t:.3f}"
        for k, t in check["teacher"].items()
    )
    verdict = "passed" if check["passed"] else "FAILED"
    return (f"check against the teacher on {_check_dev(check)} {verdict}: {figures} "
            f"(student vs teacher, tolerance {check['tolerance']:g})")


def threshold_note(info) -> str:
    """One line for people on a student's thresholds where it took its teacher's lower ones
    (``hyper.distillation.thresholds``, :func:`pipeline.tagger.training.distillation.student_thresholds`);
    empty for any other version."""
    chosen = ((info.hyper or {}).get("distillation") or {}).get("thresholds") or {}
    lowered = chosen.get("lowered") or {}
    if not lowered:
        return ""
    moved = ", ".join(f"{lab} {v['own']:g} → {v['kept']:g}" for lab, v in sorted(lowered.items()))
    why = ("its teacher's own" if chosen.get("rule") == "lower"
           else "those at which it best reproduces its teacher's spans")
    return f"thresholds lowered to {why} where its own tuned on dev were higher: {moved}"


def student_note(info) -> str:
    """One line for people on a teacher's automatic student (``info.student``): the student used
    in its place, or "student not used: <why>"; empty when training distilled none."""
    record = info.student or {}
    if not record:
        return ""
    if record.get("used"):
        return f"its student {record['version']} is used in its place (passed its check)"
    shown = f" ({record['version']})" if record.get("version") else ""
    return f"student not used{shown}: {record.get('reason') or 'no reason kept'}"


def _check_dev(check: dict) -> str:
    """Which dev dialogues the check used: the teacher's (all, or those the data held), ones the
    caller gave, or (a check recorded before the source was) the student's own split."""
    n = check["dev_dialogues"]
    dialogues = f"{n} dev dialogue{'' if n == 1 else 's'}"
    source = check.get("dev")
    if source == "teacher":
        total = check["teacher_dev_dialogues"]
        return f"its {dialogues}" if n == total else f"{n} of its {total} dev dialogues"
    if source == "caller":
        return f"{dialogues} given for dev"
    return f"the student's {dialogues}"
