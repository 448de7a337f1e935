"""Files through Django's storage API (annotator/storage.py, and the model-version registry on it,
annotator/model_store.py): local directories by default, an S3-compatible object store with BLINDSPOT_STORAGE_URL, so workers on other machines need no
shared disk. The S3 tests run against moto's S3 server, started here on 127.0.0.1 (a random
port); without moto they skip, and under CI=true they fail instead."""

from __future__ import annotations

import hashlib
import json
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotator import model_store, storage
from annotator.models import DetectorRun, Export, Prediction
from annotator.services import exports as export_services
from annotator.services import releases as release_services
from annotator.services import runs
from annotator.services.exports import gold_export_build
from annotator.settings import object_storages
from tests.conftest import need

KEY = "test-release-key-0001"
CREDENTIALS = {"access_key": "testing", "secret_key": "testing"}


@pytest.fixture(autouse=True)
def _surrogate_key(settings):
    settings.BLINDSPOT_SURROGATE_KEY = KEY
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


def _built(capture, start, **kwargs) -> Export:
    with capture(execute=True):
        export = start(**kwargs)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    return export


# --- settings -------------------------------------------------------------------------------


def test_the_default_is_the_two_local_directories_and_follows_the_settings(settings, tmp_path):
    assert settings.STORAGES["exports"]["BACKEND"] == "annotator.storage.LocalDirStorage"
    assert storage.is_local(storage.exports_storage()) and storage.is_local(storage.models_storage())
    settings.BLINDSPOT_EXPORTS_DIR = tmp_path / "elsewhere"
    assert storage.exports_storage().location == str(tmp_path / "elsewhere")
    settings.BLINDSPOT_UPLOADS_DIR = tmp_path / "up"
    key = storage.upload_save(ContentFile(b"{}", name="c.jsonl"), ".jsonl")
    with storage.upload_path({"upload": key}) as path:
        assert path == tmp_path / "up" / key and path.read_bytes() == b"{}"
    with storage.upload_path({"path": "/given/c.jsonl"}) as path:  # the command line's own file
        assert path == Path("/given/c.jsonl")
    assert storage.work_dir(storage.exports_storage(), "p/gold-v001") == tmp_path / "elsewhere" / "p" / "gold-v001"
    # publishing and materialising are no-ops on local storage: the model directory is the model
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "models"
    assert model_store.model_materialise("demo/v1") == tmp_path / "models" / "demo" / "v1"
    config = {"model_path": "/anywhere/demo/v1", "model_dir": "/anywhere"}
    assert model_store.localise_tagger_config("tagger", config) == config


def test_a_storage_url_names_an_s3_bucket_a_prefix_and_options():
    found = object_storages("s3://corpus-files/blindspot/prod?endpoint_url=http://minio:9000&addressing_style=path",
                            access_key="AK", secret_key="SK")
    assert set(found) == {"exports", "models", "uploads"}
    exports = found["exports"]
    assert exports["BACKEND"] == "storages.backends.s3.S3Storage"
    assert exports["OPTIONS"]["bucket_name"] == "corpus-files"
    assert exports["OPTIONS"]["location"] == "blindspot/prod/exports"
    assert found["models"]["OPTIONS"]["location"] == "blindspot/prod/models"
    assert exports["OPTIONS"]["endpoint_url"] == "http://minio:9000"
    assert (exports["OPTIONS"]["access_key"], exports["OPTIONS"]["secret_key"]) == ("AK", "SK")
    assert object_storages("s3://b")["models"]["OPTIONS"]["location"] == "models"
    assert "access_key" not in object_storages("s3://b")["models"]["OPTIONS"]  # boto3's own chain
    assert object_storages("s3://b?verify=false")["models"]["OPTIONS"]["verify"] is False


@pytest.mark.parametrize(("url", "message"), [
    ("http://minio:9000/bucket", "must look like s3://"),
    ("s3:///prefix", "must look like s3://"),
    ("s3://bucket?endpoint=http://x", "unknown option"),
])
def test_a_bad_storage_url_is_a_clear_error(url, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        object_storages(url)


def test_model_versions_are_two_plain_path_parts(settings, tmp_path):
    for bad in ("demo", "demo/../x", "/etc/passwd", "demo/.hidden", "a/b/c"):
        with pytest.raises(storage.StorageError, match="not a model version"):
            model_store.model_local_dir(bad)


# --- an S3-compatible store (moto's server) -------------------------------------------------


@pytest.fixture(scope="module")
def s3_server():
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        ThreadedMotoServer = None  # noqa: N806
    need(ThreadedMotoServer is not None, "needs moto[server] (the dev extra) for the S3 storage tests")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_server, settings, tmp_path):
    """A fresh bucket on the moto server, with both storage aliases pointed at it (prefix ``pfx``)."""
    import boto3

    bucket = f"blindspot-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=bucket)
    url = f"s3://{bucket}/pfx?endpoint_url={s3_server}&region_name=us-east-1&addressing_style=path"
    settings.STORAGES = {**settings.STORAGES, **object_storages(url, **CREDENTIALS)}
    settings.BLINDSPOT_STAGING_DIR = tmp_path / "staging"
    model_store._verified.clear()
    runs._cached_detector.cache_clear()
    client.bucket, client.url = bucket, url
    yield client
    model_store._verified.clear()
    runs._cached_detector.cache_clear()


def _objects(client, prefix: str) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=client.bucket, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):]: client.get_object(Bucket=client.bucket, Key=o["Key"])["Body"].read()
            for o in listed}


@pytest.mark.django_db
def test_exports_and_releases_are_written_to_and_downloaded_from_s3(s3, settings, corpus, members, client,
                                                                   django_capture_on_commit_callbacks, tmp_path):
    gold = _built(django_capture_on_commit_callbacks, export_services.gold_export_start, project=corpus,
                  user=members["admin"])
    release = _built(django_capture_on_commit_callbacks, release_services.release_start, project=corpus,
                     user=members["admin"])
    # every listed file is in the bucket with the hash the record keeps; nothing stays on local disk
    for export, folder in ((gold, "gold-v001"), (release, "release-v001")):
        stored = _objects(s3, f"pfx/exports/test/{folder}/")
        assert set(stored) == {f["name"] for f in export.files}
        for f in export.files:
            assert hashlib.sha256(stored[f["name"]]).hexdigest() == f["sha256"], f["name"]
    mapping = _objects(s3, "pfx/exports/test/private/release-v001/")
    assert set(mapping) == {"mapping.jsonl", "candidates.jsonl", "leaks.private.json"}  # all private
    assert {json.loads(line)["original"] for line in mapping["mapping.jsonl"].splitlines()} == {
        "Maria", "maria.lopez@example.com"}
    assert "mapping.jsonl" not in _objects(s3, "pfx/exports/test/release-v001/")
    assert not settings.BLINDSPOT_EXPORTS_DIR.exists()
    assert not any(p.is_file() for p in (tmp_path / "staging").rglob("*"))
    assert export_services.export_location(gold) == f"s3://{s3.bucket}/pfx/exports/test/gold-v001"

    # downloads stream from the store, for admins only
    client.force_login(members["admin"])
    response = client.get(reverse("export-download", args=["test", release.pk, "release.jsonl"]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    assert body == _objects(s3, "pfx/exports/test/release-v001/")["release.jsonl"] and b"Maria" not in body
    response = client.get(reverse("release-mapping", args=["test", release.pk]))
    assert response.status_code == 200 and b"".join(response.streaming_content) == mapping["mapping.jsonl"]
    response = client.get(reverse("export-download", args=["test", gold.pk, "conll/gold.bio.conll"]))
    assert b"".join(response.streaming_content) == _objects(s3, "pfx/exports/test/gold-v001/conll/")["gold.bio.conll"]
    for name in ("annotator", "outsider"):
        client.force_login(members[name])
        response = client.get(reverse("export-download", args=["test", release.pk, "release.jsonl"]))
        assert response.status_code in (403, 404)
        assert client.get(reverse("release-mapping", args=["test", release.pk])).status_code in (403, 404)

    # a file gone from the store is a 404 with a reason, not a server error
    s3.delete_object(Bucket=s3.bucket, Key="pfx/exports/test/release-v001/leaks.json")
    client.force_login(members["admin"])
    assert client.get(reverse("export-download", args=["test", release.pk, "leaks.json"])).status_code == 404


@pytest.mark.django_db
def test_export_gold_command_copies_a_stored_export_out(s3, corpus, tmp_path):
    call_command("export_gold", "--project", "test", "--out", str(tmp_path / "copy"))
    export = Export.objects.get(project=corpus, kind="gold")
    for f in export.files:
        assert hashlib.sha256((tmp_path / "copy" / f["name"]).read_bytes()).hexdigest() == f["sha256"]


@pytest.mark.django_db
def test_a_rebuilt_export_replaces_what_an_earlier_attempt_left_in_the_store(s3, corpus, members,
                                                                             django_capture_on_commit_callbacks):
    gold = _built(django_capture_on_commit_callbacks, export_services.gold_export_start, project=corpus,
                  user=members["admin"])
    s3.put_object(Bucket=s3.bucket, Key="pfx/exports/test/gold-v001/stale-from-a-killed-attempt.txt", Body=b"x")
    Export.objects.filter(pk=gold.pk).update(status="failed")  # an admin retries it
    assert gold_export_build(export_id=gold.pk) == "built"
    gold.refresh_from_db()
    assert set(_objects(s3, "pfx/exports/test/gold-v001/")) == {f["name"] for f in gold.files}


@pytest.mark.django_db
def test_an_uploaded_corpus_is_stored_and_imported_from_the_store(s3, settings, members, client, corpus_bytes,
                                                                  django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotator.models import BackgroundJob, Message

    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {"file": SimpleUploadedFile("c.jsonl", corpus_bytes),
                                                   "spans_as": "gold"})
    assert response.status_code == 302
    job = BackgroundJob.objects.get(kind="import")
    assert job.status == "succeeded", job.error
    assert Message.objects.count() == 6
    assert _objects(s3, "pfx/uploads/") == {job.params["upload"]: corpus_bytes}  # kept for a retry
    assert not settings.BLINDSPOT_UPLOADS_DIR.exists()


@pytest.mark.django_db
def test_a_failed_build_leaves_no_staged_files_behind(s3, settings, corpus, members, monkeypatch,
                                                      django_capture_on_commit_callbacks, tmp_path):
    def broken(export, paths, key, step):
        paths["mapping"].write_text('{"original": "Maria"}\n', encoding="utf-8")
        raise RuntimeError("the worker lost its database connection")

    monkeypatch.setattr(release_services, "_deidentify", broken)
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        release_services.release_start(project=corpus, user=members["admin"])
    export = Export.objects.get(project=corpus, kind="release")
    assert export.status == "failed" and "lost its database connection" in export.error
    assert not any(p.is_file() for p in (tmp_path / "staging").rglob("*"))
    assert _objects(s3, "pfx/exports/") == {}


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
    stored = _objects(s3, f"pfx/models/{info.full_version}/")
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

    # the command line on a machine with an empty cache fetches the newest usable version itself
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "machine-d"
    model_store._verified.clear()
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
        wait_for(lambda w=w: " ready." in w.output(), timeout=90, what=f"a worker to start\n{w.output()[-3000:]}")
    run = runs.run_start(project=corpus, detector="tagger", chunk_dialogues=1)
    assert runs.run_enqueue(run) == run.total_chunks == 10
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=240,
             what=f"the run to finish\n{workers[0].output()[-2000:]}\n{workers[1].output()[-2000:]}")
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    names = {w.rsplit("@", 1)[0] for w in run.chunks.values_list("worker", flat=True)}
    assert names == {f"{app.conf.task_default_queue}-0", f"{app.conf.task_default_queue}-1"}
    on_workers = _outputs(run)
    assert len(on_workers[1]) == len(in_process[1]) > 6  # the extra dialogues were scored too
    # the same messages of the same project, scored by two different runs: compare per message
    _same(in_process, on_workers)
    stored = _objects(s3, f"pfx/models/{info.full_version}/")
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
