"""Writes of the tagger area: training the Blindspot tagger from a project's gold set,
distilling a smaller student, choosing the version in use, and the model in the loop that
retrains from the project's own gold and keeps a new version only if it is better.

The human-in-the-loop cycle closes here: adjudicated gold trains the next tagger, whose runs
pre-label the next batch. Models live under ``<name>/<version>/`` in the model store
(``BLINDSPOT_MODELS_DIR`` by default; on an object store that directory is each machine's cache:
:mod:`annotator.model_store`); the project records which ``name/version`` its tagger runs use.
Reads (versions, decisions, the learning curve, open jobs) are in :mod:`annotator.selectors.tagger`.

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
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from annotator import model_store, storage
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import BackgroundJob, JobStatus, Project
from annotator.selectors.tagger import (
    distil_refusal,
    distillation_summary,
    gold_size,
    open_distillation,
    open_retrain,
    open_training,
    project_tagger,
    shared,
    version_blockers,
)
from annotator.services import jobs
from annotator.services.audit import audit_record
from annotator.services.dialogues import stream_dialogues
from pipeline.detectors.base import DetectorError
from pipeline.formats import read_corpus
from pipeline.metrics.comparison import compare_versions
from pipeline.registry import build
from pipeline.synthetic import generate_corpus
from pipeline.tagger import (
    ModelNotFoundError,
    TrainConfig,
    TrainingError,
    activation_blockers,
    read_info,
    train_tagger,
)
from pipeline.tagger import retrain as plan
from pipeline.tagger.onnx_export import OnnxVerificationError, export_onnx
from pipeline.tagger.retrain import detector_predictions, gold_split
from pipeline.tagger.store import update_info
from pipeline.tagger.training.config import STUDENT_DEFAULTS, SYNTHETIC_SEED
from pipeline.tagger.training.student import distil_after
from pipeline.types import Dialogue as PDialogue

RETRAIN = BackgroundJob.Kind.RETRAIN
N_BOOT = 1000


class TaggerError(ValueError):
    """Training cannot start or the chosen version does not exist."""


class TeacherError(TaggerError):
    """The version asked to be distilled does not exist (the command names its option for it)."""


def gold_dialogues(project: Project) -> list[PDialogue]:
    """Dialogues whose every message has a gold decision, with the gold spans on their messages
    (read through the one read path, after merging pending gold).

    Partly decided dialogues are left out: their undecided messages would teach "no PII".
    """
    return [s.dialogue for s in stream_dialogues(project, "gold", complete_only=True)]


def training_data(*, project: Project | None, use_gold: bool, jsonl: str | None, synthetic: int,
                  seed: int = SYNTHETIC_SEED) -> list[PDialogue]:
    """The gold set (less its held-out part), a labelled file and ``synthetic`` generated
    dialogues. The same options give the same dialogue ids (generated dialogue ``i`` is
    ``train-1234-<i>`` whatever the count), so a student distilled with its teacher's options
    finds the teacher's dev dialogues by id (``pipeline.tagger.training.data.teacher_dev_split``)."""
    return training_sources(project=project, use_gold=use_gold, jsonl=jsonl, synthetic=synthetic, seed=seed)[0]


def training_sources(*, project: Project | None, use_gold: bool, jsonl: str | None, synthetic: int,
                     seed: int = SYNTHETIC_SEED) -> tuple[list[PDialogue], dict[str, int]]:
    """:func:`training_data` and how many of its dialogues came from each source (``gold``,
    ``file``, ``generated``): recorded with the version (``hyper.sources``), so that a version
    trained on generated dialogues only is known to carry no project's gold and may run in any
    project (:func:`annotator.selectors.tagger.shared`)."""
    gold: list[PDialogue] = []
    if use_gold and project is not None:  # less the held-out part that retrains are judged on
        gold = gold_split(gold_dialogues(project))[0]
    labelled = read_corpus(jsonl) if jsonl else []
    generated: list[PDialogue] = []
    if synthetic:
        policy = project.labelling_policy if project is not None else "strict"
        generated = generate_corpus(synthetic, seed=seed, policy=policy, id_prefix="train")
    data = gold + labelled + generated
    if not data:
        raise TaggerError("No training data: the project has no complete gold dialogues outside the part "
                          "held out to compare versions; "
                          "add --synthetic N or --jsonl PATH.")
    return data, {"gold": len(gold), "file": len(labelled), "generated": len(generated)}


def tagger_train(*, project: Project, use_gold: bool = True, jsonl: str | None = None, synthetic: int = 0,
                 seed: int = SYNTHETIC_SEED, dev_jsonl: str | None = None, options: dict[str, Any] | None = None,
                 progress=None, activate: bool = True, student: bool = True, user=None):
    """Train, save under the models directory, then (``student``, unless ``options`` already name a
    ``teacher``) distil the new version into a faster student in the same call
    (:func:`pipeline.tagger.training.student.distil_after`, on the same data: its dev is the
    teacher's). By default the student becomes the project's tagger when it passed its check
    against the teacher and nothing else blocks it, else the teacher when
    :func:`pipeline.tagger.activation_blockers` finds nothing wrong with it (a version that
    stopped early or diverged is kept but not activated; the Tagger page shows why, and why a
    student was not used). Returns the teacher's ``ModelInfo``, its ``student`` record filled in.
    The data options are recorded in ``tagger.json`` (``hyper.data_options``), so a student
    distilled from the page trains on the same data and finds this version's dev dialogues.

    ``dev_jsonl`` names labelled dialogues to score dev on instead of a split of the training data
    (for a student: instead of its teacher's dev dialogues); the caller answers for neither model
    having trained on them."""
    dialogues, sources = training_sources(project=project, use_gold=use_gold, jsonl=jsonl, synthetic=synthetic,
                                          seed=seed)
    config = TrainConfig(
        dialogues, read_corpus(dev_jsonl) if dev_jsonl else None, name=project.slug, out_dir=settings.BLINDSPOT_MODELS_DIR,
        base_model=settings.BLINDSPOT_TAGGER_BASE or None, labels=project.labels,
        progress=progress, export_onnx=settings.BLINDSPOT_TAGGER_ONNX, **(options or {}),
    )
    data_options = {"use_gold": use_gold, "jsonl": jsonl, "synthetic": synthetic, "seed": seed}
    info = _record(project, train_tagger(config), data_options, sources, user)
    made = [info]
    if student and config.teacher is None:
        info, pupil = distil_after(info, config, settings.BLINDSPOT_TAGGER_STUDENT)
        model_store.model_publish(info.path)  # the teacher's rewritten tagger.json
        made = [_record(project, pupil, data_options, sources, user), info] if pupil is not None else made
    usable = [i for i in made if not activation_blockers(i)]
    if activate and usable:
        tagger_activate(project=project, version=usable[0].full_version, user=user)
    return info


def _record(project: Project, info, data_options: dict[str, Any], sources: dict[str, int], user):
    """A newly trained version with its data options and sources recorded, published, and audited."""
    info = update_info(info.path, hyper={**info.hyper, "data_options": data_options, "sources": sources})
    model_store.model_publish(info.path)  # into the object store, where one is configured
    audit_record(user=user, action="tagger.train", obj=project, project=project, version=info.full_version,
                 data=info.data, dev_metrics=info.dev_metrics, seconds=info.training_seconds,
                 blockers=activation_blockers(info), distilled_from=info.distilled_from)
    return info


def tagger_default_publish(*, project: Project, user=None) -> str:
    """After a training: make ``project``'s active version the default that commands without a
    project run, when there is no default yet or the default is a version of this project's; a
    default of another project's is kept (one project's throwaway training never takes over the
    commands another relies on: ``tagger_activate VERSION --default`` moves it). Says what
    happened, for people."""
    version, current = project.active_tagger, model_store.model_default()
    if not version:
        return f"The default tagger stays {current or 'unset'}: {project.slug} has no active version."
    if current == version:
        return f"{version} is the default tagger of commands without a project."
    if current and current.split("/")[0] != project.slug:
        return (f"The default tagger stays {current} (another project's); make this one the default with "
                f"tagger_activate {version} --project {project.slug} --default.")
    tagger_default_set(version=version, user=user)
    return f"{version} is now the default tagger of commands without a project (was {current or 'none'})."


def tagger_default_set(*, version: str, user=None) -> str | None:
    """Make ``name/version`` the default of commands without a project (refused with
    ``TaggerError`` when it does not exist or may not become active); audited. The previous default."""
    previous = model_store.model_default()
    try:
        info = model_store.model_default_set(version, by="user" if user else "command line")
    except (ModelNotFoundError, storage.StorageError) as exc:
        raise TaggerError(str(exc)) from None
    project = Project.objects.filter(slug=info.name).first()
    audit_record(user=user, action="tagger.default", obj=project, project=project, version=version,
                 previous=previous)
    return previous


def tagger_distil(*, project: Project, teacher: str, options: dict[str, Any] | None = None, **train):
    """Distil ``teacher`` (``name/version`` or a version directory; ``TeacherError`` when neither)
    into a smaller student with the measured recipe (``STUDENT_DEFAULTS``, which ``options``
    override), trained and activated as :func:`tagger_train` does with the data options in
    ``train``. The one workflow of ``manage.py train_tagger --distill-from`` and the page's job."""
    try:
        path = teacher_path(teacher)
    except TaggerError as exc:
        raise TeacherError(str(exc)) from None
    return tagger_train(project=project, options={**STUDENT_DEFAULTS, **(options or {}), "teacher": path}, **train)


def teacher_data_options(project: Project, info) -> dict[str, Any]:
    """The data ``info`` was trained on in the app, so its student finds the teacher's dev
    dialogues: as recorded in its ``tagger.json``, else the params of the training job that made
    it, else the project's gold alone (a mismatch then fails the job with ``TeacherDevError``)."""
    recorded = (info.hyper or {}).get("data_options")
    if recorded:
        return {k: recorded[k] for k in ("use_gold", "jsonl", "synthetic", "seed")}
    made_by = BackgroundJob.objects.filter(
        project=project, kind=BackgroundJob.Kind.TRAIN, status=JobStatus.SUCCEEDED, result__version=info.full_version
    ).first()
    params = made_by.params if made_by is not None else {}
    return {"use_gold": params.get("use_gold", True), "jsonl": None, "synthetic": params.get("synthetic", 0),
            "seed": SYNTHETIC_SEED}


def tagger_distil_job_start(*, project: Project, user, teacher: str) -> tuple[BackgroundJob, bool]:
    """Queue a student of the project's version ``teacher`` on the data it was trained on;
    ``(job, created)``. While one distillation is queued or running it is returned instead
    (``created`` False); a version the page would not offer is refused (``TaggerError``)."""
    info = project_version(project, teacher)
    refusal = distil_refusal(info, version_blockers(info))
    if refusal:
        raise TaggerError(f"{teacher} cannot be distilled: {refusal}.")
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one request at a time
        existing = open_distillation(project)
        if existing is not None and jobs.job_fail_if_stale(existing, what="this distillation"):
            existing = None
        if existing is not None:
            return existing, False
        job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.TRAIN, created_by=user,
                                           params={"distill_from": teacher, **teacher_data_options(project, info)})
        audit_record(user=user, action="tagger.distil.queue", obj=job, project=project, teacher=teacher)
        enqueue(names.TAGGER_TRAIN, job.pk)
    return job, True


def version_info(version: str):
    """The saved version ``name/version`` under the models directory, or ``TaggerError`` (also for
    a reference that is no such name: the model store checks its form and length)."""
    try:
        return model_store.model_info(version)  # its tagger.json, from the model store
    except (ModelNotFoundError, storage.StorageError) as exc:
        raise TaggerError(str(exc)) from None


def project_version(project: Project, version: str):
    """``version_info`` of a version ``project`` may use: one of its own tagger's, or one trained on
    generated dialogues only (:func:`annotator.selectors.tagger.shared`: the deployment's day-one
    model, whatever project trained it). Another project's version trained on that project's gold
    can repeat its names, so every reference a project's admin gives (activate, distil, a run's
    ``version``) is checked here first; a missing one and one that is not shared get the same
    answer, which says nothing of what another project has."""
    if isinstance(version, str) and version.split("/")[0] == project.slug:
        return version_info(version)
    shown = version[:120] if isinstance(version, str) else version
    info = None
    if isinstance(version, str) and "/" in version:
        try:
            info = version_info(version)
        except TaggerError:
            info = None
    if info is None or not shared(info):
        raise TaggerError(f"{shown} is not a version of {project.slug}'s tagger (another project's version may run "
                          "here only when it was trained on generated dialogues alone, as a day-one model is).")
    return info


def teacher_path(ref: str) -> str:
    """The local directory of a teacher to distil: a saved version (``name/version``, fetched from
    the model store where one is used) or a version directory; ``TaggerError`` when neither."""
    if Path(ref).is_dir() and (Path(ref) / "tagger.json").is_file():
        return ref
    version_info(ref)
    return str(model_store.model_materialise(ref))


def tagger_activate(*, project: Project, version: str, user=None) -> None:
    """Make ``version`` the project's tagger; refused (``TaggerError`` with every reason) for a
    version whose training stopped early, diverged, or whose export failed its check."""
    blockers = activation_blockers(project_version(project, version))
    if blockers:
        raise TaggerError(f"{version} cannot become the active tagger: {'; '.join(blockers)}.")
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(active_tagger=version)
        project.active_tagger = version
        audit_record(user=user, action="tagger.activate", obj=project, project=project, version=version)


def tagger_export(version: str):
    """Export a saved version (``name/version``) to ONNX and verify it against torch; raises
    ``TaggerError`` when the graph disagrees (then nothing is registered)."""
    if "/" not in version or ".." in version:
        raise TaggerError(f"{version!r} is not a model version (name/version)")
    try:
        path = model_store.model_materialise(version)  # fetched from the model store, where one is used
        read_info(path)
        info = export_onnx(path)
    except (ModelNotFoundError, OnnxVerificationError, storage.StorageError) as exc:
        raise TaggerError(str(exc)) from None
    model_store.model_publish(path)  # the ONNX files and the rewritten tagger.json
    return info


def tagger_train_job_start(*, project: Project, user, synthetic: int, use_gold: bool) -> tuple[BackgroundJob, bool]:
    """Queue a training of the project's tagger; ``(job, created)``. One at a time per project, as
    retrains and distillations: while one is queued or running (and not stale) it is returned
    instead, since four clicks would otherwise train four models on the same data."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one request at a time
        existing = open_training(project)
        if existing is not None and jobs.job_fail_if_stale(existing, what="this training"):
            existing = None
        if existing is not None:
            return existing, False
        job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.TRAIN, created_by=user,
                                           params={"synthetic": synthetic, "use_gold": use_gold})
        enqueue(names.TAGGER_TRAIN, job.pk)
    return job, True


def tagger_train_job_run(job: BackgroundJob) -> None:
    """The training job: a plain training (the teacher, then its automatic student), or a student
    of ``distill_from``; the result records the version, its dev metrics, what blocks it, the
    student record (used or why not) and the version now active."""
    jobs.job_start(job)
    params = job.params
    data = {"use_gold": params.get("use_gold", True), "synthetic": params.get("synthetic", 0),
            "progress": lambda done, total, message="": jobs.job_progress(job, done, total, message)}
    try:
        if "distill_from" in params:  # a student, on the data its teacher was trained on
            info = tagger_distil(project=job.project, teacher=params["distill_from"], jsonl=params.get("jsonl"),
                                 seed=params.get("seed", SYNTHETIC_SEED), user=job.created_by, **data)
        else:
            info = tagger_train(project=job.project, user=job.created_by, **data)
    except (TaggerError, TrainingError) as exc:  # the user's to fix; recorded, not retried
        jobs.job_fail(job, exc)
        return
    except Exception as exc:
        jobs.job_fail(job, exc)
        raise
    jobs.job_finish(job, result={"version": info.full_version, "dev_metrics": info.dev_metrics,
                                 "training_seconds": round(info.training_seconds, 1),
                                 "blockers": version_blockers(info), "distilled_from": info.distilled_from,
                                 "distillation": distillation_summary(info), "student": info.student,
                                 "active": Project.objects.get(pk=job.project_id).active_tagger})


# --------------------------------------------------------------------------- retraining


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
        audit_record(
            user=user,
            action="tagger.retrain.queue",
            obj=job,
            project=locked,
            trigger=trigger,
            gold_messages=size,
        )
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
