"""Training the Blindspot tagger from a project's gold set, and choosing the version in use.

The human-in-the-loop cycle closes here: adjudicated gold trains the next tagger, whose runs
pre-label the next batch. Models live under ``<name>/<version>/`` in the model store
(``BLINDSPOT_MODELS_DIR`` by default; on an object store that directory is each machine's cache:
:mod:`annotator.storage`);
the project records which ``name/version`` its tagger runs use.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from annotator import storage
from annotator.models import BackgroundJob, JobStatus, Project
from annotator.services import jobs
from annotator.services.audit import audit_record
from pipeline.tagger.training.config import SYNTHETIC_SEED
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
    from annotator.services.dialogues import stream_dialogues

    return [s.dialogue for s in stream_dialogues(project, "gold", complete_only=True)]


def training_data(*, project: Project | None, use_gold: bool, jsonl: str | None, synthetic: int,
                  seed: int = SYNTHETIC_SEED) -> list[PDialogue]:
    """The gold set (less its held-out part), a labelled file and ``synthetic`` generated
    dialogues. The same options give the same dialogue ids (generated dialogue ``i`` is
    ``train-1234-<i>`` whatever the count), so a student distilled with its teacher's options
    finds the teacher's dev dialogues by id (``pipeline.tagger.training.data.teacher_dev_split``)."""
    from pipeline.corpus import read_corpus
    from pipeline.synthetic import generate_corpus
    from pipeline.tagger.retrain import gold_split

    data: list[PDialogue] = []
    if use_gold and project is not None:  # less the held-out part that retrains are judged on
        data += gold_split(gold_dialogues(project))[0]
    if jsonl:
        data += read_corpus(jsonl)
    if synthetic:
        policy = project.labelling_policy if project is not None else "strict"
        data += generate_corpus(synthetic, seed=seed, policy=policy, id_prefix="train")
    if not data:
        raise TaggerError("No training data: the project has no complete gold dialogues outside the part "
                          "held out to compare versions; "
                          "add --synthetic N or --jsonl PATH.")
    return data


def tagger_train(*, project: Project, use_gold: bool = True, jsonl: str | None = None, synthetic: int = 0,
                 seed: int = SYNTHETIC_SEED, dev_jsonl: str | None = None, options: dict[str, Any] | None = None,
                 progress=None, activate: bool = True, user=None):
    """Train, save under the models directory, and (by default) make it the project's tagger when
    :func:`pipeline.tagger.activation_blockers` finds nothing wrong with it (a version that
    stopped early or diverged is kept but not activated; the Tagger page shows why).
    The data options are recorded in ``tagger.json`` (``hyper.data_options``), so a student
    distilled from the page trains on the same data and finds this version's dev dialogues.

    ``dev_jsonl`` names labelled dialogues to score dev on instead of a split of the training data
    (for a student: instead of its teacher's dev dialogues); the caller answers for neither model
    having trained on them."""
    from pipeline.corpus import read_corpus
    from pipeline.tagger import TrainConfig, activation_blockers, train_tagger
    from pipeline.tagger.store import update_info

    dialogues = training_data(project=project, use_gold=use_gold, jsonl=jsonl, synthetic=synthetic, seed=seed)
    info = train_tagger(TrainConfig(
        dialogues, read_corpus(dev_jsonl) if dev_jsonl else None, name=project.slug, out_dir=settings.BLINDSPOT_MODELS_DIR,
        base_model=settings.BLINDSPOT_TAGGER_BASE or None, labels=project.labels,
        progress=progress, export_onnx=settings.BLINDSPOT_TAGGER_ONNX, **(options or {}),
    ))
    info = update_info(info.path, hyper={**info.hyper, "data_options": {
        "use_gold": use_gold, "jsonl": jsonl, "synthetic": synthetic, "seed": seed}})
    storage.model_publish(info.path)  # into the object store, where one is configured
    if activate and not activation_blockers(info):
        tagger_activate(project=project, version=info.full_version, user=user)
    audit_record(user=user, action="tagger.train", obj=project, project=project, version=info.full_version,
                 data=info.data, dev_metrics=info.dev_metrics, seconds=info.training_seconds,
                 blockers=activation_blockers(info))
    return info


def tagger_distil(*, project: Project, teacher: str, options: dict[str, Any] | None = None, **train):
    """Distil ``teacher`` (``name/version`` or a version directory; ``TeacherError`` when neither)
    into a smaller student with the measured recipe (``STUDENT_DEFAULTS``, which ``options``
    override), trained and activated as :func:`tagger_train` does with the data options in
    ``train``. The one workflow of ``manage.py train_tagger --distill-from`` and the page's job."""
    from pipeline.tagger.training.config import STUDENT_DEFAULTS

    try:
        path = teacher_path(teacher)
    except TaggerError as exc:
        raise TeacherError(str(exc)) from None
    return tagger_train(project=project, options={**STUDENT_DEFAULTS, **(options or {}), "teacher": path}, **train)


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


def open_distillation(project: Project) -> BackgroundJob | None:
    """The project's distillation job that is queued or running, if any."""
    return BackgroundJob.objects.filter(
        project=project, kind=BackgroundJob.Kind.TRAIN, status__in=jobs.UNFINISHED, params__has_key="distill_from"
    ).first()


def tagger_distil_job_start(*, project: Project, user, teacher: str) -> tuple[BackgroundJob, bool]:
    """Queue a student of the project's version ``teacher`` on the data it was trained on;
    ``(job, created)``. While one distillation is queued or running it is returned instead
    (``created`` False); a version the page would not offer is refused (``TaggerError``)."""
    from annotator.dispatch import enqueue

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
        enqueue("annotator.tasks.tagger_train_job", job.pk)
    return job, True


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
    from pipeline.tagger.store import metric_name

    figures = ", ".join(
        f"{metric_name(k)} {check['student'][k]:.3f} vs {t:.3f}"
        for k, t in check["teacher"].items()
    )
    verdict = "passed" if check["passed"] else "FAILED"
    return (f"check against the teacher on {_check_dev(check)} {verdict}: {figures} "
            f"(student vs teacher, tolerance {check['tolerance']:g})")


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


def tagger_versions(project: Project) -> list:
    """The project's saved versions, newest first (from the model store: annotator/storage.py)."""
    return sorted(storage.model_infos(project.slug), key=lambda i: i.version, reverse=True)


def version_blockers(info) -> list[str]:
    """Why ``info`` (a ModelInfo) may not become active; empty when it may."""
    from pipeline.tagger import activation_blockers

    return activation_blockers(info)


def usable_versions(project: Project) -> list:
    """The project's versions that may become active, newest first."""
    return [v for v in tagger_versions(project) if not version_blockers(v)]


def version_info(version: str):
    """The saved version ``name/version`` under the models directory, or ``TaggerError`` (also for
    a reference that is no such name: the model store checks its form and length)."""
    from pipeline.tagger import ModelNotFoundError

    try:
        return storage.model_info(version)  # its tagger.json, from the model store
    except (ModelNotFoundError, storage.StorageError) as exc:
        raise TaggerError(str(exc)) from None


def project_version(project: Project, version: str):
    """``version_info`` of a version of ``project``'s own tagger: another project's model was
    trained on that project's gold and can repeat its names, so every reference a project's admin
    gives (activate, distil, a run's ``version``) is checked here first."""
    if not isinstance(version, str) or version.split("/")[0] != project.slug:
        shown = version[:120] if isinstance(version, str) else version
        raise TaggerError(f"{shown} is not a version of {project.slug}'s tagger.")
    return version_info(version)


def teacher_path(ref: str) -> str:
    """The local directory of a teacher to distil: a saved version (``name/version``, fetched from
    the model store where one is used) or a version directory; ``TaggerError`` when neither."""
    from pathlib import Path

    if Path(ref).is_dir() and (Path(ref) / "tagger.json").is_file():
        return ref
    version_info(ref)
    return str(storage.model_materialise(ref))


def tagger_activate(*, project: Project, version: str, user=None) -> None:
    """Make ``version`` the project's tagger; refused (``TaggerError`` with every reason) for a
    version whose training stopped early, diverged, or whose export failed its check."""
    from pipeline.tagger import activation_blockers

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
    from pipeline.tagger import ModelNotFoundError, read_info
    from pipeline.tagger.onnx_export import OnnxVerificationError, export_onnx

    if "/" not in version or ".." in version:
        raise TaggerError(f"{version!r} is not a model version (name/version)")
    try:
        path = storage.model_materialise(version)  # fetched from the model store, where one is used
        read_info(path)
        info = export_onnx(path)
    except (ModelNotFoundError, OnnxVerificationError, storage.StorageError) as exc:
        raise TaggerError(str(exc)) from None
    storage.model_publish(path)  # the ONNX files and the rewritten tagger.json
    return info


def open_training(project: Project) -> BackgroundJob | None:
    """The project's training job (not a distillation) that is queued or running, if any."""
    return BackgroundJob.objects.filter(
        project=project, kind=BackgroundJob.Kind.TRAIN, status__in=jobs.UNFINISHED
    ).exclude(params__has_key="distill_from").first()


def tagger_train_job_start(*, project: Project, user, synthetic: int, use_gold: bool) -> tuple[BackgroundJob, bool]:
    """Queue a training of the project's tagger; ``(job, created)``. One at a time per project, as
    retrains and distillations: while one is queued or running (and not stale) it is returned
    instead, since four clicks would otherwise train four models on the same data."""
    from annotator.dispatch import enqueue

    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one request at a time
        existing = open_training(project)
        if existing is not None and jobs.job_fail_if_stale(existing, what="this training"):
            existing = None
        if existing is not None:
            return existing, False
        job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.TRAIN, created_by=user,
                                           params={"synthetic": synthetic, "use_gold": use_gold})
        enqueue("annotator.tasks.tagger_train_job", job.pk)
    return job, True


def tagger_train_job_run(job: BackgroundJob) -> None:
    from pipeline.tagger import TrainingError

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
                                 "distillation": distillation_summary(info)})
