"""Writes of the model in the loop: retraining the project's tagger from its own gold and keeping a
new version only if it is better (training itself, distillation and activation are
:mod:`annotator.services.tagger`).

Retraining: ``Project.retrain_every`` (new gold messages; 0 = only on demand) and
``retrain_gold_mark`` (gold messages when the last retrain was queued) decide when gold growth
queues a retrain. Gold growing is an event: a merge or an adjudication queues the
``annotator.tagger.retrain_check`` task (:func:`tagger_retrain_if_due`); the Tagger page and
``manage.py retrain_tagger`` queue one on demand. At most one retrain is queued or running per
project (a partial unique constraint on ``BackgroundJob``), so two merges at once queue one job.

The retrain job (:func:`tagger_retrain_job_run`) warm-starts from the active version when there
is one (:func:`pipeline.tagger.retrain.warm_retraining_set`: the gold it has not seen, a sample of
the old, generated replay, ``WARM_START``'s short schedule), else, or when asked for ``full``,
builds the set with :func:`pipeline.tagger.retrain.retraining_set` and trains from the base
model; either way it scores the new and the active version on
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

from annotator import model_store, storage
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import BackgroundJob, Project
from annotator.selectors.tagger import gold_size, open_retrain, project_tagger, version_blockers
from annotator.services import jobs
from annotator.services.audit import audit_record
from annotator.services.tagger import TaggerError, gold_dialogues, tagger_activate, version_info
from pipeline.detectors.base import DetectorError
from pipeline.metrics.comparison import compare_versions
from pipeline.registry import build
from pipeline.tagger import ModelNotFoundError, TrainConfig, TrainingError, train_tagger
from pipeline.tagger import retrain as plan
from pipeline.tagger.retrain import detector_predictions
from pipeline.tagger.store import update_info
from pipeline.tagger.training.student import distil_after

RETRAIN = BackgroundJob.Kind.RETRAIN
N_BOOT = 1000

def tagger_retrain_request(
    *,
    project: Project,
    user=None,
    trigger: str = "on demand",
    only_if_due: bool = False,
    options: dict[str, Any] | None = None,
    full: bool = False,
) -> tuple[BackgroundJob | None, bool]:
    """Queue a retrain of ``project``'s tagger; ``(job, created)``. When one is already queued or
    running it is returned instead (``created`` False). ``only_if_due``: only when the gold has
    grown by ``retrain_every`` messages since the mark (else ``(None, False)``). ``options`` go to
    ``train_tagger`` (epochs, num_layers, max_seconds, ...). ``full``: train from the base model
    on all the gold, not warm-started from the active version."""
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
                        **({"full": True} if full else {}),
                    },
                )
        except IntegrityError:  # another process queued one between the check and the insert
            return open_retrain(locked), False
        Project.objects.filter(pk=locked.pk).update(retrain_gold_mark=size)
        project.retrain_gold_mark = size
        audit_record(user=user, action="tagger.retrain.queue", obj=job, project=locked, trigger=trigger,
                     gold_messages=size)
        enqueue(names.TAGGER_RETRAIN, job.pk)
    return job, True


def tagger_retrain_if_due(*, project: Project) -> BackgroundJob | None:
    """After gold grew (a merge, an adjudication: the ``annotator.tagger.retrain_check`` task):
    queue a retrain when ``retrain_every`` new gold messages have arrived since the last one.
    Cheap when the setting is off."""
    every = Project.objects.filter(pk=project.pk).values_list("retrain_every", flat=True).first()
    if not every:
        return None
    job, created = tagger_retrain_request(
        project=project, trigger=f"every {every} gold messages", only_if_due=True
    )
    return job if created else None


def retrain_settings_set(*, project: Project, retrain_every: int, user=None) -> None:
    """Set how many new gold messages queue a retrain (0: only on demand); audited."""
    if retrain_every < 0:
        raise TaggerError("retrain_every must be 0 (off) or a positive number of gold messages")
    Project.objects.filter(pk=project.pk).update(retrain_every=retrain_every)
    project.retrain_every = retrain_every
    audit_record(user=user, action="tagger.retrain.settings", obj=project, project=project, retrain_every=retrain_every)


# ------------------------------------------------------------------------------------ the job


def _predictions(version: str, project: Project, dev):
    """``version``'s spans on ``dev``, run as a tagger run would (fetched from the model store)."""
    path = str(model_store.model_materialise(version))
    detector = build("tagger", {"model_path": path, "policy": project.labelling_policy})
    return detector_predictions(detector, dev)


def _retraining_set(job: BackgroundJob, project: Project):
    """The job's set: warm from the version it started from (kept in the job's params, so a
    redelivered job uses the same parent after activating its child), else full."""
    gold = gold_dialogues(project)
    if "warm_from" not in job.params:
        params = {**job.params, "warm_from": "" if job.params.get("full") else project_tagger(project).version}
        BackgroundJob.objects.filter(pk=job.pk).update(params=params)
        job.params = params
    parent = job.params["warm_from"]
    if not parent:
        return plan.retraining_set(
            gold,
            generated_per_gold=plan.GENERATED_PER_GOLD,  # read now: a bench may tune the constant
            policy=project.labelling_policy,
        )
    info = version_info(parent)
    return plan.warm_retraining_set(gold, info.train_ids, parent=parent,
                                    generated_per_gold=plan.GENERATED_REPLAY, policy=project.labelling_policy)


def _train(job: BackgroundJob, project: Project, data, progress):
    """Train on ``data.train``: warm-started from ``data.warm["parent"]`` and stopped early on
    ``data.tune``, or from the base model, tuning on its own split of the training data; never
    on dev. A full retrain distils its student as training does, and the student is the candidate
    when it passed its check; a warm start keeps its parent's size (a student's gives a student)."""
    warm = {}
    if data.tune is not None:
        warm = {**plan.WARM_START, "init_from": str(model_store.model_materialise(data.warm["parent"]))}
    config = TrainConfig(
        data.train, data.tune, name=project.slug, out_dir=settings.BLINDSPOT_MODELS_DIR,
        base_model=settings.BLINDSPOT_TAGGER_BASE or None, labels=project.labels, progress=progress,
        export_onnx=settings.BLINDSPOT_TAGGER_ONNX, **{**warm, **(job.params.get("options") or {})},
    )
    info = train_tagger(config)
    if not warm and config.teacher is None:
        info, pupil = distil_after(info, config, settings.BLINDSPOT_TAGGER_STUDENT)
        model_store.model_publish(info.path)  # the teacher, with its student record
        info = pupil if info.student["used"] else info
    model_store.model_publish(info.path)  # into the object store, where one is configured
    params = {**job.params, "trained_version": info.full_version}
    BackgroundJob.objects.filter(pk=job.pk).update(params=params)
    job.params = params
    return info


def _compare(project: Project, new_info, dev, say) -> tuple[Any, str | None]:
    """The comparison of the new version with the active one on ``dev`` (``None`` when the new
    version cannot even be scored), and the active version compared with."""
    say("scoring the new version on the project's dev dialogues")
    new_pred = _predictions(new_info.full_version, project, dev)
    old_version = project_tagger(project).version or None  # its own, or the day-one model it runs
    old_pred = None
    if old_version:
        say(f"scoring the active version {old_version}")
        old_pred = _predictions(old_version, project, dev)
    return compare_versions(dev, new_pred, old_pred, n_boot=N_BOOT, seed=0), old_version


def _activate_unless_changed(job: BackgroundJob, project: Project, info, old_version: str | None,
                             reason: str) -> tuple[str, str, bool]:
    """Activate the better ``info`` unless the active version changed since it was compared with
    ``old_version``; ``(decision, reason, activated)``."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        now = project_tagger(locked).version or None
        if now != old_version:
            return "not activated", (
                f"the active version changed to {now or 'none'} during the "
                f"retrain; compared with {old_version or 'none'}: {reason}"
            ), False
        tagger_activate(project=locked, version=info.full_version, user=job.created_by)
    return plan.ACTIVATED, reason, True


def _decide_and_record(job: BackgroundJob, project: Project, info, data) -> dict[str, Any]:
    """Compare ``info`` with the active version, decide, activate if better, and record the
    decision in the version's ``tagger.json`` and the audit log."""

    def say(message: str) -> None:
        jobs.job_progress(job, 1, 1, message)

    blockers = version_blockers(info)
    comparison, old_version, error = None, project_tagger(project).version or None, ""
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
        decision, reason, activated = _activate_unless_changed(job, project, info, old_version, reason)
    activation = {
        "decision": decision,
        "reason": reason,
        "activated": activated,
        "blockers": blockers,
        "compared_with": old_version,
        "comparison": comparison.to_dict() if comparison else None,
        "data": {**data.summary(), "generated_per_gold": plan.GENERATED_PER_GOLD if data.tune is None
                 else plan.GENERATED_REPLAY},
        "job": job.pk,
        "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    path = model_store.model_materialise(info.full_version)
    update_info(path, activation=activation)
    model_store.model_publish(path)  # the rewritten tagger.json
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
    if not jobs.job_start(job):
        return
    project = Project.objects.get(pk=job.project_id)
    try:
        jobs.job_progress(job, 0, 1, "reading the project's gold")
        data = _retraining_set(job, project)
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
    except (TaggerError, TrainingError, ModelNotFoundError) as exc:  # the user's to fix: not retried
        jobs.job_fail(job, exc)
        return
    except BaseException as exc:
        jobs.job_fail(job, exc)
        raise
    jobs.job_finish(job, result={"version": info.full_version, "decision": activation["decision"],
                                 "reason": activation["reason"], "activated": activation["activated"]})
