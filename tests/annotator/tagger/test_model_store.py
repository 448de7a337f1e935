"""The model store (annotator/model_store.py): trained tagger versions published to the models
storage, materialised file by file on a machine whose cache is empty, listed and refused when
they differ from what was published. The S3 tests run against moto's server (the ``s3`` fixture).
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator import model_store, storage
from annotator.models import DetectorRun, Prediction
from annotator.services import runs
from tests.annotator.helpers import s3_objects


def test_model_versions_are_two_plain_path_parts(settings, tmp_path):
    for bad in ("demo", "demo/../x", "/etc/passwd", "demo/.hidden", "a/b/c"):
        with pytest.raises(storage.StorageError, match="not a model version"):
            model_store.model_local_dir(bad)


def _outputs(run) -> tuple[set, dict]:
    """A run's predictions and every message's decision margin (a tiny model may predict nothing,
    but it scores every message)."""
    from annotator.models import MessageUncertainty

    predictions = set(Prediction.objects.filter(run=run).values_list("message_id", "start", "end", "label"))
    return predictions, dict(MessageUncertainty.objects.filter(run=run).values_list("message_id", "margin"))


def _same(a: tuple[set, dict], b: tuple[set, dict]) -> None:
    assert a[0] == b[0]
    assert a[1].keys() == b[1].keys() and len(a[1]) > 0
    assert all(a[1][k] == b[1][k] or abs(a[1][k] - b[1][k]) < 1e-4 for k in a[1]), (a[1], b[1])


def _tiny_options() -> dict:
    return {"epochs": 1, "num_layers": 1, "check_precision": False, "min_dev_score": 0.0}


@pytest.mark.slow
@pytest.mark.django_db
def test_a_model_trained_on_one_machine_runs_on_another_with_an_empty_cache(
        s3, settings, corpus, tmp_path, django_capture_on_commit_callbacks):
    """Training publishes the version; a worker whose models directory is empty materialises it,
    checked file by file, and its run predicts what a run on the training machine does."""
    pytest.importorskip("torch")
    from annotator.selectors import tagger as tagger_selectors
    from annotator.services import tagger

    settings.BLINDSPOT_MODELS_DIR = tmp_path / "machine-a"
    info = tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options=_tiny_options())
    corpus.refresh_from_db()
    assert corpus.active_tagger == info.full_version  # activation read tagger.json from the store
    stored = s3_objects(s3, f"pfx/models/{info.full_version}/")
    listing = json.loads(stored.pop(model_store.PUBLISHED))
    assert {f["name"] for f in listing["files"]} == set(stored) and "tagger.json" in stored
    assert "model.safetensors" in stored

    def run_here() -> tuple[set, dict]:
        with django_capture_on_commit_callbacks(execute=True):
            run = runs.run_start(project=corpus, detector="tagger")
            runs.run_enqueue(run)
        run.refresh_from_db()
        assert run.status == "succeeded", run.error
        return _outputs(run)

    on_a = run_here()
    # another machine: nothing on its disk; the Tagger page lists from the store
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "machine-b"
    model_store._verified.clear()
    runs._cached_detector.cache_clear()
    assert [i.full_version for i in tagger_selectors.tagger_versions(corpus)] == [info.full_version]
    assert not (tmp_path / "machine-b").exists()
    on_b = run_here()
    _same(on_a, on_b)
    assert len(on_b[1]) == 6  # every message of the corpus was scored
    local = tmp_path / "machine-b" / info.full_version
    for name, data in stored.items():
        assert (local / name).read_bytes() == data, name

    # the command line on a machine with an empty cache fetches the default version (published to
    # the store by the machine that set it) itself
    tagger.tagger_default_publish(project=corpus)
    assert "default.json" in s3_objects(s3, "pfx/models/")
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "machine-d"
    model_store._verified.clear()
    assert model_store.model_default() == info.full_version
    from annotator.models import Message

    messages = Message.objects.filter(project=corpus).select_related("dialogue").order_by("dialogue_id", "position")
    lines = {}
    for m in messages:
        line = lines.setdefault(m.dialogue_id, {"id": m.dialogue.external_id, "anchor": m.dialogue.anchor,
                                                "messages": []})
        line["messages"].append({"speaker": m.speaker, "text": m.text})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines.values()), encoding="utf-8")
    first_run = DetectorRun.objects.filter(project=corpus, detector="tagger").earliest("pk")
    same_options = {k: v for k, v in first_run.config.items() if k not in ("model_path", "model_dir")}
    call_command("detect", str(tmp_path / "corpus.jsonl"), "--detector", "tagger", "--workers", "1",
                 "--config", json.dumps(same_options), "--out", str(tmp_path / "detect.jsonl"),
                 stdout=StringIO(), stderr=StringIO())
    assert (tmp_path / "machine-d" / info.full_version / "model.safetensors").read_bytes() == stored["model.safetensors"]
    rows = [json.loads(line) for line in (tmp_path / "detect.jsonl").read_text(encoding="utf-8").splitlines()]
    ids = {m.pk: (m.dialogue.external_id, m.position) for m in messages}
    assert len(rows) == len(ids)
    assert {((r["dialogue_id"], r["index"]), s["start"], s["end"], s["label"]) for r in rows for s in r["spans"]} == {
        (ids[message], start, end, label) for message, start, end, label in on_a[0]}

    # a damaged cached file is fetched again; a stored file that differs from its list is refused
    (local / "config.json").write_text("{}", encoding="utf-8")
    model_store._verified.clear()
    assert (model_store.model_materialise(info.full_version) / "config.json").read_bytes() == stored["config.json"]
    s3.put_object(Bucket=s3.bucket, Key=f"pfx/models/{info.full_version}/config.json", Body=b"{}")
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "machine-c"
    with pytest.raises(storage.StorageError, match="config.json differ from the published list"):
        model_store.model_materialise(info.full_version)
    assert not (tmp_path / "machine-c" / info.full_version).exists()


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_real_workers_with_empty_caches_run_a_tagger_from_the_store(s3, settings, corpus, tmp_path,
                                                                       celery_worker):
    """Two Celery workers, each with a models directory of its own (two machines, no shared disk):
    both take chunks of a tagger run, each fetches the model from the store into its own cache,
    and together they predict what one process does."""
    pytest.importorskip("torch")
    from annotator.celery import app
    from annotator.services import tagger
    from annotator.services.imports import corpus_import
    from pipeline.synthetic import generate_corpus
    from tests.conftest import wait_for

    corpus_import(project=corpus, dialogues=generate_corpus(8, seed=11, id_prefix="more"), source="more",
                  spans_as="ignore")
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "trainer"
    info = tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options=_tiny_options())
    corpus.refresh_from_db()
    assert corpus.active_tagger == info.full_version

    one = runs.run_start(project=corpus, detector="tagger", chunk_dialogues=1)
    for chunk in one.chunks.order_by("index"):
        assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    in_process = _outputs(one)

    caches = [tmp_path / f"machine-{i}" for i in range(2)]
    env = {"BLINDSPOT_STORAGE_URL": s3.url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    workers = [celery_worker(concurrency=1, extra_env={**env, "BLINDSPOT_MODELS_DIR": str(cache),
                                                       "BLINDSPOT_STAGING_DIR": str(cache / "staging")})
               for cache in caches]
    for w in workers:
        wait_for(lambda w=w: " ready." in w.output(), timeout=90, what=lambda w=w: f"a worker to start\n{w.output()[-3000:]}")
    run = runs.run_start(project=corpus, detector="tagger", chunk_dialogues=1)
    assert runs.run_enqueue(run) == run.total_chunks == 10
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=240,
             what=lambda: f"the run to finish\n{workers[0].output()[-2000:]}\n{workers[1].output()[-2000:]}")
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    names = {w.rsplit("@", 1)[0] for w in run.chunks.values_list("worker", flat=True)}
    assert names == {f"{app.conf.task_default_queue}-0", f"{app.conf.task_default_queue}-1"}
    on_workers = _outputs(run)
    assert len(on_workers[1]) == len(in_process[1]) > 6  # the extra dialogues were scored too
    # the same messages of the same project, scored by two different runs: compare per message
    _same(in_process, on_workers)
    stored = s3_objects(s3, f"pfx/models/{info.full_version}/")
    for cache in caches:
        for name in ("model.safetensors", "tagger.json"):
            assert (cache / info.full_version / name).read_bytes() == stored[name]


def test_publish_models_uploads_versions_trained_before_the_store(s3, settings, tmp_path):
    """Files stand in for weights here: publishing and materialising only move and check bytes."""
    version = tmp_path / "models" / "old" / "20250101-000000-abc"
    version.mkdir(parents=True)
    (version / "tagger.json").write_text('{"name": "old", "version": "20250101-000000-abc"}', encoding="utf-8")
    (version / "model.safetensors").write_bytes(b"weights" * 1000)
    out = StringIO()
    call_command("publish_models", stdout=out)
    assert f"old/20250101-000000-abc -> s3://{s3.bucket}/pfx/models/old/20250101-000000-abc" in out.getvalue()
    assert model_store.model_versions() == ["old/20250101-000000-abc"]
    call_command("publish_models", "old/20250101-000000-abc", stdout=StringIO())  # safe to repeat
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "elsewhere"
    local = model_store.model_materialise("old/20250101-000000-abc")
    assert (local / "model.safetensors").read_bytes() == b"weights" * 1000
    with pytest.raises(CommandError, match="no tagger.json"):
        call_command("publish_models", "old/nope", stdout=StringIO())


def test_publish_models_needs_an_object_store():
    with pytest.raises(CommandError, match="nothing to publish"):
        call_command("publish_models", stdout=StringIO())


@pytest.mark.django_db
def test_a_version_missing_from_the_store_is_a_clear_error(s3, settings, corpus):
    from annotator.selectors import tagger as tagger_selectors
    from annotator.services import tagger

    with pytest.raises(storage.StorageError, match="not in the model store"):
        model_store.model_materialise("test/20260101-000000-abc")
    with pytest.raises(tagger.TaggerError, match="not in the model store"):
        tagger.tagger_activate(project=corpus, version="test/20260101-000000-abc")
    assert tagger_selectors.tagger_versions(corpus) == []
