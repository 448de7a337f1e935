"""Writes of the tagger area: training the Blindspot tagger from a project's gold set,
distilling a smaller student, exporting, and choosing the version in use. The model in the loop
(retraining from the project's own gold) is :mod:`annotator.services.tagger_retrain`.

The human-in-the-loop cycle closes here: adjudicated gold trains the next tagger, whose runs
pre-label the next batch. Models live under ``<name>/<version>/`` in the model store
(``BLINDSPOT_MODELS_DIR`` by default; on an object store that directory is each machine's cache:
:mod:`annotator.model_store`); the project records which ``name/version`` its tagger runs use.
Reads (versions, decisions, the learning curve, open jobs) are in :mod:`annotator.selectors.tagger`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from annotator import model_store, storage
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import BackgroundJob, JobStatus, Project
from annotator.selectors.tagger import (
    distil_refusal,
    distillation_summary,
    open_distillation,
    open_training,
    shared,
    stored_info,
    version_blockers,
)
from annotator.services import jobs
from annotator.services.audit import audit_record
from annotator.services.dialogues import stream_dialogues
from pipeline.formats import read_corpus
from pipeline.synthetic import generate_corpus
from pipeline.tagger import (
    ModelNotFoundError,
    TrainConfig,
    TrainingError,
    activation_blockers,
    read_info,
    train_tagger,
)
from pipeline.tagger.backends import measured_choice
from pipeline.tagger.onnx_export import OnnxVerificationError, export_onnx
from pipeline.tagger.retrain import gold_split
from pipeline.tagger.store import update_info
from pipeline.tagger.training.config import STUDENT_DEFAULTS, SYNTHETIC_SEED
from pipeline.tagger.training.student import distil_after
from pipeline.types import Dialogue as PDialogue


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
    active = Project.objects.get(pk=job.project_id).active_tagger
    jobs.job_finish(job, result={"version": info.full_version, "dev_metrics": info.dev_metrics,
                                 "training_seconds": round(info.training_seconds, 1),
                                 "blockers": version_blockers(info), "distilled_from": info.distilled_from,
                                 "distillation": distillation_summary(info), "student": info.student,
                                 "active": active, "runtime": runtime_measure(job, active)})


def runtime_measure(job: BackgroundJob, version: str | None) -> str:
    """Measure the now active ``version``'s runtime on this machine (``backend: auto``; about ten
    seconds, once per machine) inside the training job, so the project's first run does not spend
    them while its other workers wait on the measurement; the reason in words, or why not. A
    failure here is said, never the job's: the first run measures again."""
    info = stored_info(version) if version else None
    if info is None:
        return ""
    jobs.job_progress(job, 1, 1, "measuring the runtime on this machine")
    try:
        return measured_choice(info)["reason"]
    except (OSError, RuntimeError, ValueError) as exc:
        return f"not measured: {exc}"[:300]

