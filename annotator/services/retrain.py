"""The model in the loop: retrain the project's tagger from its own gold, keep it only if better.

``Project.retrain_every`` (new gold messages; 0 = only on demand) and ``retrain_gold_mark`` (gold
messages when the last retrain was queued) decide when a gold merge or an adjudication queues a
retrain; the Tagger page and ``manage.py retrain_tagger`` queue one on demand. At most one
retrain is queued or running per project (a partial unique constraint on ``BackgroundJob``), so
two merges at once queue one job.

The job (:func:`tagger_retrain_job_run`) builds the set with
:func:`pipeline.tagger.retrain.retraining_set`, trains, scores the new and the active version on
the project-gold dev split with ``compare_versions``, writes the decision and its reason into the
new version's ``tagger.json`` (``activation``) and the audit log, and activates the new version
only if it is better and free of activation blockers. A redelivered job does not train twice: the
trained version is kept in the job's params, and a decision already written is not made again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from annotator import storage
from annotator.models import AdjudicationDecision, BackgroundJob, Project
from annotator.services import jobs
from annotator.services.audit import audit_record
from annotator.services.tagger import (
    TaggerError,
    gold_dialogues,
    tagger_activate,
    tagger_versions,
    version_blockers,
    version_info,
)

RETRAIN = BackgroundJob.Kind.RETRAIN
N_BOOT = 1000

def gold_size(project: Project) -> int:
    """Messages of ``project`` with a gold decision: what ``retrain_every`` counts."""
    return AdjudicationDecision.objects.filter(message__project=project).count()


def open_retrain(project: Project) -> BackgroundJob | None:
    return BackgroundJob.objects.filter(
        project=project, kind=RETRAIN, status__in=jobs.UNFINISHED
    ).first()


def tagger_retrain_request(
    *,
    project: Project,
    user=None,
    trigger: str = "on demand",
    only_if_due: bool = False,
    options: dict[str, Any] | None = None,
) -> tuple[BackgroundJob | None, bool]:
    """Queue a retrain of ``project``'s tagger; ``(job, created)``. When one is already queued or
    running it is returned instead (``created`` False). ``only_if_due``: only when the gold has
    grown by ``retrain_every`` messages since the mark (else ``(None, False)``). ``options`` go to
    ``train_tagger`` (epochs, num_layers, max_seconds, ...)."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        size = gold_size(locked)
        if only_if_due and not (
            locked.retrain_every and size >= locked.retrain_gold_mark + locked.retrain_every
        ):
            return None, False
        existing = open_retrain(locked)
        if existing is not None and jobs.job_fail_if_stale(existing, what="this retrain"):
            existing = None
        if existing is not None:
            return existing, False
        try:
            with transaction.atomic():
                job = BackgroundJob.objects.create(
                    project=locked,
                    kind=RETRAIN,
                    created_by=user,
                    params={
                        "trigger": trigger,
                        "gold_messages": size,
                        **({"options": options} if options else {}),
                    },
                )
        except IntegrityError:  # another process queued one between the check and the insert
            return open_retrain(locked), False
        Project.objects.filter(pk=locked.pk).update(retrain_gold_mark=size)
        project.retrain_gold_mark = size
        audit_record(
            user=user,
            action="tagger.retrain.queue",
            obj=job,
            project=locked,
            trigger=trigger,
            gold_messages=size,
        )
        from annotator.dispatch import enqueue

        enqueue("annotator.tasks.tagger_retrain_job", job.pk)
    return job, True


def tagger_retrain_if_due(*, project: Project) -> BackgroundJob | None:
    """After gold grew (a merge, an adjudication): queue a retrain when ``retrain_every`` new gold
    messages have arrived since the last one. Cheap when the setting is off."""
    every = Project.objects.filter(pk=project.pk).values_list("retrain_every", flat=True).first()
    if not every:
        return None
    job, created = tagger_retrain_request(
        project=project, trigger=f"every {every} gold messages", only_if_due=True
    )
    return job if created else None


def retrain_settings_set(*, project: Project, retrain_every: int, user=None) -> None:
    if retrain_every < 0:
        raise TaggerError("retrain_every must be 0 (off) or a positive number of gold messages")
    Project.objects.filter(pk=project.pk).update(retrain_every=retrain_every)
    project.retrain_every = retrain_every
    audit_record(
        user=user,
        action="tagger.retrain.settings",
        obj=project,
        project=project,
        retrain_every=retrain_every,
    )


# ------------------------------------------------------------------------------------ the job


def _predictions(version: str, project: Project, dev):
    """``version``'s spans on ``dev``, run as a tagger run would (fetched from the model store)."""
    from pipeline.registry import build
    from pipeline.tagger.retrain import detector_predictions

    path = str(storage.model_materialise(version))
    detector = build("tagger", {"model_path": path, "policy": project.labelling_policy})
    return detector_predictions(detector, dev)


def _train(job: BackgroundJob, project: Project, data, progress):
    """Train on ``data.train`` (the new version tunes on its own split of it, never on dev)."""
    from pipeline.tagger import TrainConfig, train_tagger

    info = train_tagger(TrainConfig(
        data.train,
        None,
        name=project.slug,
        out_dir=settings.BLINDSPOT_MODELS_DIR,
        base_model=settings.BLINDSPOT_TAGGER_BASE or None,
        labels=project.labels,
        progress=progress,
        export_onnx=settings.BLINDSPOT_TAGGER_ONNX,
        **(job.params.get("options") or {}),
    ))
    storage.model_publish(info.path)  # into the object store, where one is configured
    params = {**job.params, "trained_version": info.full_version}
    BackgroundJob.objects.filter(pk=job.pk).update(params=params)
    job.params = params
    return info


def _compare(project: Project, new_info, dev, say) -> tuple[Any, str | None]:
    """The comparison of the new version with the active one on ``dev`` (``None`` when the new
    version cannot even be scored), and the active version compared with."""
    from pipeline.metrics.comparison import compare_versions

    say("scoring the new version on the project's dev dialogues")
    new_pred = _predictions(new_info.full_version, project, dev)
    old_version = project.active_tagger or None
    old_pred = None
    if old_version:
        say(f"scoring the active version {old_version}")
        old_pred = _predictions(old_version, project, dev)
    return compare_versions(dev, new_pred, old_pred, n_boot=N_BOOT, seed=0), old_version


def _decide_and_record(job: BackgroundJob, project: Project, info, data) -> dict[str, Any]:
    from pipeline.detectors.base import DetectorError
    from pipeline.tagger import retrain as plan
    from pipeline.tagger.store import update_info

    def say(message: str) -> None:
        jobs.job_progress(job, 1, 1, message)

    blockers = version_blockers(info)
    comparison, old_version, error = None, project.active_tagger or None, ""
    try:
        comparison, old_version = _compare(project, info, data.dev, say)
    except (
        DetectorError,
        storage.StorageError,
    ) as exc:  # a version that cannot load: no comparison
        error = str(exc)
    decision, reason = plan.decide(comparison, blockers)
    if error:
        reason = f"{reason}; {error}" if reason else error
    activated = False
    if decision == plan.ACTIVATED:
        with transaction.atomic():
            locked = Project.objects.select_for_update().get(pk=project.pk)
            if (locked.active_tagger or None) != old_version:
                decision = "not activated"
                reason = (
                    f"the active version changed to {locked.active_tagger or 'none'} during the "
                    f"retrain; compared with {old_version or 'none'}: {reason}"
                )
            else:
                tagger_activate(project=locked, version=info.full_version, user=job.created_by)
                activated = True
    activation = {
        "decision": decision,
        "reason": reason,
        "activated": activated,
        "blockers": blockers,
        "compared_with": old_version,
        "comparison": comparison.to_dict() if comparison else None,
        "data": {**data.summary(), "generated_per_gold": plan.GENERATED_PER_GOLD},
        "job": job.pk,
        "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    path = storage.model_materialise(info.full_version)
    update_info(path, activation=activation)
    storage.model_publish(path)  # the rewritten tagger.json
    audit_record(
        user=job.created_by,
        action="tagger.retrain.decide",
        obj=project,
        project=project,
        version=info.full_version,
        decision=decision,
        reason=reason[:1000],
        compared_with=old_version,
        job=job.pk,
    )
    return activation


def tagger_retrain_job_run(job: BackgroundJob) -> None:
    """Train a new version from the project's gold (+ generated) and activate it only if better."""
    from pipeline.tagger import ModelNotFoundError, TrainingError
    from pipeline.tagger import retrain as plan

    if not jobs.job_start(job):
        return
    project = Project.objects.get(pk=job.project_id)
    try:
        jobs.job_progress(job, 0, 1, "reading the project's gold")
        data = plan.retraining_set(
            gold_dialogues(project),
            generated_per_gold=plan.GENERATED_PER_GOLD,  # read now: a bench may tune the constant
            policy=project.labelling_policy,
        )
        info = None
        if job.params.get("trained_version"):  # redelivered after training: do not train again
            try:
                info = version_info(job.params["trained_version"])
            except TaggerError:
                info = None
        if info is None:
            info = _train(
                job,
                project,
                data,
                lambda done, total, message="": jobs.job_progress(job, done, total, message),
            )
        activation = info.activation if info.activation.get("job") == job.pk else None
        if activation is None:
            activation = _decide_and_record(job, project, info, data)
    except (
        TaggerError,
        TrainingError,
        ModelNotFoundError,
    ) as exc:  # the user's to fix: not retried
        jobs.job_fail(job, exc)
        return
    except BaseException as exc:
        jobs.job_fail(job, exc)
        raise
    jobs.job_finish(
        job,
        result={
            "version": info.full_version,
            "decision": activation["decision"],
            "reason": activation["reason"],
            "activated": activation["activated"],
        },
    )


# ------------------------------------------------------------------------------- page reads


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
    from pipeline.tagger.retrain import learning_point

    points = []
    for info in tagger_versions(project) if infos is None else infos:
        point = learning_point(info.activation or {})
        if point is not None:
            points.append({**point, "version": info.version})
    return sorted(points, key=lambda p: (p["gold_messages"], p["version"]))
