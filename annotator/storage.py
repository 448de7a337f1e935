"""Files that outlive a job — export and release bundles, trained tagger versions — through
Django's storage API, so that any machine can write them and any other can read them.

Three aliases of ``settings.STORAGES``: ``exports``, ``models`` and ``uploads``. By default they
are the local directories ``BLINDSPOT_EXPORTS_DIR``, ``BLINDSPOT_MODELS_DIR`` and
``BLINDSPOT_UPLOADS_DIR`` (:class:`LocalDirStorage`) and
nothing here copies anything: files are written where they stay. With ``BLINDSPOT_STORAGE_URL``
they are S3 storages (django-storages), and then:

- a bundle is built in a local staging directory (:func:`work_dir`) and uploaded once complete
  (:func:`publish_tree`); downloads stream from the store (:func:`open_file`);
- an uploaded corpus is stored by the web process and read by the import job wherever it runs
  (:func:`upload_save`, :func:`upload_path`);
- a trained tagger version is written by ``pipeline/`` to the local models directory as ever, then
  published (:func:`model_publish`): its files first, then ``published.json`` (every file's name,
  size and SHA-256), so a version is listed only once it is complete. A worker materialises a
  version into its own models directory, now a cache, verified against that list before anything
  loads it (:func:`model_materialise`).

``pipeline/`` knows nothing of this: it reads and writes local paths only.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages
from django.utils import timezone

from pipeline.hashing import sha256_file

EXPORTS, MODELS, UPLOADS = "exports", "models", "uploads"
PUBLISHED = "published.json"  # a model version's file list, uploaded last
CHUNK = 1 << 20
_verified: dict[
    str, str
] = {}  # local model directory -> the file list this process checked it against


class StorageError(RuntimeError):
    """A stored file is missing or does not match what was published; the message says which."""


class LocalDirStorage(FileSystemStorage):
    """A file system storage rooted at the directory a setting names, read on every use (so a
    test, or ``override_settings``, that moves the directory moves the storage too)."""

    def __init__(self, setting: str, **kwargs: Any) -> None:
        self.setting = setting
        super().__init__(**kwargs)

    @property
    def base_location(self) -> str:  # type: ignore[override]
        return str(getattr(settings, self.setting))

    @property
    def location(self) -> str:  # type: ignore[override]
        return os.path.abspath(self.base_location)


def exports_storage() -> Storage:
    return storages[EXPORTS]


def models_storage() -> Storage:
    return storages[MODELS]


def uploads_storage() -> Storage:
    return storages[UPLOADS]


def is_local(storage: Storage) -> bool:
    """Files of this storage are plain files on this machine (nothing to upload or download)."""
    return isinstance(storage, FileSystemStorage)


def describe(storage: Storage, key: str) -> str:
    """Where ``key`` lives, for people: a local path or an ``s3://bucket/...`` address."""
    if is_local(storage):
        return storage.path(key)
    bucket = getattr(storage, "bucket_name", None)
    location = getattr(storage, "location", "")
    return (
        f"s3://{bucket}/{posixpath.join(location, key)}"
        if bucket
        else f"{type(storage).__name__}:{key}"
    )


def _key(*parts: str) -> str:
    key = posixpath.join(*parts)
    if key.startswith("/") or ".." in key.split("/"):
        raise SuspiciousOperation(f"{key!r} is not a storage key")
    return key


# ----------------------------------------------------------------------------------- trees


def work_dir(storage: Storage, key: str) -> Path:
    """The local directory files stored under ``key`` are written to: the final place on local
    storage; a staging directory (uploaded by :func:`publish_tree`) on a remote one."""
    if is_local(storage):
        return Path(storage.path(_key(key)))
    return Path(settings.BLINDSPOT_STAGING_DIR) / _key(key)


def walk(storage: Storage, prefix: str) -> Iterator[str]:
    """The key of every file under ``prefix`` (recursively)."""
    try:
        dirs, files = storage.listdir(_key(prefix))
    except FileNotFoundError:
        return
    for name in sorted(files):
        yield posixpath.join(prefix, name)
    for sub in sorted(dirs):
        yield from walk(storage, posixpath.join(prefix, sub))


def delete_tree(storage: Storage, prefix: str) -> int:
    keys = list(walk(storage, prefix))
    for key in keys:
        storage.delete(key)
    return len(keys)


def _local_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def upload_tree(
    storage: Storage, root: Path, prefix: str, *, last: Iterable[str] = ()
) -> list[str]:
    """Upload every file under ``root`` to ``prefix/<relative path>``, the names in ``last`` after
    all others (a reader that waits for them then finds the rest)."""
    last = [n for n in last if (root / n).is_file()]
    names = [n for n in _local_files(root) if n not in last] + last
    for name in names:
        with open(root / name, "rb") as fh:
            storage.save(_key(prefix, name), File(fh, name=name))
    return names


def publish_tree(storage: Storage, root: Path, prefix: str, *, last: Iterable[str] = ()) -> None:
    """Make the files built in ``root`` (see :func:`work_dir`) the stored contents of ``prefix``:
    nothing to do on local storage; on a remote one, replace what an earlier attempt left there,
    upload, and drop the staging directory. Safe to repeat."""
    if is_local(storage) or not root.is_dir():
        return
    delete_tree(storage, prefix)
    upload_tree(storage, root, prefix, last=last)
    shutil.rmtree(root)


def download_tree(storage: Storage, prefix: str, target: Path) -> list[str]:
    """Copy every file under ``prefix`` into ``target`` (kept relative paths)."""
    names = [posixpath.relpath(k, prefix) for k in walk(storage, prefix)]
    for name in names:
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        with storage.open(_key(prefix, name), "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
    return names


def open_file(storage: Storage, key: str) -> File:
    """The stored file at ``key``, open for reading; ``StorageError`` when it is not there."""
    try:
        key = _key(key)
        if not storage.exists(key):
            raise StorageError(f"{key} is missing from the store")
        return storage.open(key, "rb")
    except (SuspiciousOperation, FileNotFoundError):
        raise StorageError(f"{key} is missing from the store") from None


# ----------------------------------------------------------------------------------- uploads


def upload_save(upload: File, suffix: str = "") -> str:
    """Store an uploaded corpus file under a fresh name; returns its key (an import job's ``upload``)."""
    return uploads_storage().save(f"{uuid.uuid4().hex}{suffix}", upload)


@contextlib.contextmanager
def upload_path(params: Mapping[str, Any]) -> Iterator[Path]:
    """A local path to an import job's file: its ``upload`` key in the uploads storage (the file
    itself on local storage, else a temporary copy, removed afterwards), or a local ``path``
    (the command line, and jobs queued before uploads were stored)."""
    if not params.get("upload"):
        yield Path(params["path"])
        return
    store = uploads_storage()
    if is_local(store):
        yield Path(store.path(_key(params["upload"])))
        return
    suffix = Path(params["upload"]).suffix
    with tempfile.NamedTemporaryFile(suffix=suffix) as out:
        with open_file(store, params["upload"]) as src:
            shutil.copyfileobj(src, out, CHUNK)
        out.flush()
        yield Path(out.name)


# ----------------------------------------------------------------------------------- models


def file_list(root: Path) -> list[dict[str, Any]]:
    """Name, size and SHA-256 of every file of a model version directory (the list itself aside)."""
    return [
        {"name": n, "size": (root / n).stat().st_size, "sha256": sha256_file(root / n)}
        for n in _local_files(root)
        if n != PUBLISHED
    ]


# One part of ``name/version``: a project slug or a version (``20260101-000000-1a2b3c4d``), short
# enough for every file system (a 5,000-character reference would otherwise reach the disk).
_VERSION_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _version_key(version: str) -> str:
    """``name/version`` checked: two plain, short path parts."""
    parts = version.split("/")
    if len(parts) != 2 or not all(_VERSION_PART.fullmatch(p) for p in parts):
        raise StorageError(f"{version[:120]!r} is not a model version (name/version)")
    return version


def model_local_dir(version: str) -> Path:
    """Where ``name/version`` lives (or is cached) on this machine."""
    return Path(settings.BLINDSPOT_MODELS_DIR) / _version_key(version)


def model_publish(path: str | Path) -> None:
    """Publish the version saved at ``path`` (``<models dir>/<name>/<version>``): on a remote
    store, upload its files and then ``published.json``; nothing to do on local storage. Publish
    again after changing the directory (an ONNX export adds files and rewrites ``tagger.json``)."""
    storage = models_storage()
    if is_local(storage):
        return
    root = Path(path)
    version = _version_key(f"{root.parent.name}/{root.name}")
    listing = {
        "format": 1,
        "version": version,
        "published_at": timezone.now().isoformat(),
        "files": file_list(root),
    }
    (root / PUBLISHED).write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
    storage.delete(_key(version, PUBLISHED))  # unlisted while its files change
    for key in walk(storage, version):
        if posixpath.relpath(key, version) not in {f["name"] for f in listing["files"]}:
            storage.delete(key)
    upload_tree(storage, root, version, last=[PUBLISHED])


def _published(storage: Storage, version: str) -> dict[str, Any]:
    try:
        with open_file(storage, _key(version, PUBLISHED)) as fh:
            return json.loads(fh.read().decode("utf-8"))
    except StorageError:
        raise StorageError(
            f"model {version} is not in the model store ({describe(storage, version)})"
        ) from None


def _matches(root: Path, files: list[dict[str, Any]]) -> bool:
    return all(
        (root / f["name"]).is_file()
        and (root / f["name"]).stat().st_size == f["size"]
        and sha256_file(root / f["name"]) == f["sha256"]
        for f in files
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process at a time materialises a version on this machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, the rename still guards
            yield
            return
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def model_materialise(version: str) -> Path:
    """The local directory of ``name/version``, ready to load: on local storage the version's own
    directory; on a remote store a copy in this machine's models directory, downloaded when missing
    or different and checked file by file against the published list (size and SHA-256)."""
    storage = models_storage()
    target = model_local_dir(version)
    if is_local(storage):
        return target
    listing = _published(storage, version)
    files = listing.get("files") or []
    stamp = json.dumps(files, sort_keys=True)
    if _verified.get(str(target)) == stamp and target.is_dir():
        return target  # checked by this process already: a run's every chunk need not re-hash it
    with _locked(target.parent / f".{target.name}.lock"):
        if _matches(target, files):
            _verified[str(target)] = stamp
            return target
        tmp = target.parent / f".{target.name}.download-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for f in files:
            dest = tmp / f["name"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open_file(storage, _key(version, f["name"])) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
        bad = [f["name"] for f in files if not _matches(tmp, [f])]
        if bad:
            shutil.rmtree(tmp)
            raise StorageError(
                f"model {version}: {', '.join(bad)} differ from the published list "
                "(size or SHA-256); publish the version again"
            )
        (tmp / PUBLISHED).write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    _verified[str(target)] = stamp
    return target


def model_versions(name: str | None = None) -> list[str]:
    """``name/version`` of every complete version in the store (of one ``name``), sorted."""
    storage = models_storage()
    if is_local(storage):
        root = Path(storage.location)
        return sorted(
            f"{m.parent.parent.name}/{m.parent.name}"
            for m in root.glob(f"{name or '*'}/*/tagger.json")
            if not m.parent.name.startswith(".") and not m.parent.parent.name.startswith(".")
        )
    names = [name] if name else _listdir(storage, "")[0]
    return sorted(
        f"{n}/{v}"
        for n in names
        if not n.startswith(".")
        for v in _listdir(storage, n)[0]
        if not v.startswith(".") and storage.exists(_key(n, v, PUBLISHED))
    )


def _listdir(storage: Storage, prefix: str) -> tuple[list[str], list[str]]:
    try:
        return storage.listdir(prefix)
    except FileNotFoundError:
        return [], []


def model_info(version: str):
    """The ``ModelInfo`` of ``name/version`` from its stored ``tagger.json`` (nothing else is
    downloaded); its ``path`` is where the version lives or is cached on this machine.
    ``pipeline.tagger.ModelNotFoundError`` when there is no such version."""
    from pipeline.tagger.store import META_FILE, ModelInfo, ModelNotFoundError, read_info

    try:
        path = model_local_dir(version)
    except StorageError as exc:
        raise ModelNotFoundError(str(exc)) from None
    storage = models_storage()
    if is_local(storage):
        return read_info(path)
    if not storage.exists(_key(version, PUBLISHED)):
        raise ModelNotFoundError(
            f"model {version} is not in the model store ({describe(storage, version)})"
        )
    with open_file(storage, _key(version, META_FILE)) as fh:
        return ModelInfo.from_dict(json.loads(fh.read().decode("utf-8")), path)


def model_infos(name: str | None = None) -> list:
    """Every complete stored version (of one ``name``), oldest first, as ``ModelInfo``; a damaged
    one is skipped, as :func:`pipeline.tagger.list_models` does on disk."""
    from pipeline.tagger import list_models
    from pipeline.tagger.store import ModelNotFoundError

    storage = models_storage()
    if is_local(storage):
        return list_models(storage.location, name)
    infos = []
    for version in model_versions(name):
        try:
            infos.append(model_info(version))
        except (ValueError, KeyError, TypeError, ModelNotFoundError, StorageError):
            continue
    return sorted(infos, key=lambda i: (i.name, i.version))


def localise_tagger_config(detector: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """A run's detector config with its tagger model on this machine: on a remote store the
    recorded ``model_path`` (``<models dir of the machine that started the run>/<name>/<version>``)
    is materialised into this machine's models directory; ensembles are followed into their
    tagger member(s). Unchanged on local storage."""
    cfg = dict(config)
    if is_local(models_storage()):
        return cfg
    if detector == "tagger":
        if not cfg.get("model_path"):
            raise StorageError(
                "a tagger run on an object store needs model_path (a name/version directory): "
                "the app passes the project's active version"
            )
        path = Path(cfg["model_path"])
        cfg["model_path"] = str(model_materialise(f"{path.parent.name}/{path.name}"))
        cfg["model_dir"] = str(settings.BLINDSPOT_MODELS_DIR)
    elif detector == "ensemble":
        if isinstance(cfg.get("tagger"), Mapping):
            cfg["tagger"] = localise_tagger_config("tagger", cfg["tagger"])
        if isinstance(cfg.get("members"), list):
            cfg["members"] = [
                {**m, "config": localise_tagger_config(m["name"], m.get("config") or {})}
                if isinstance(m, Mapping) and isinstance(m.get("name"), str)
                else m
                for m in cfg["members"]
            ]
    return cfg


def command_detector_config(detector: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """A command line's detector config (``detect``, ``deidentify``) whose tagger reads this
    machine's models directory. On an object store the version is fetched into it first: the one
    ``model_path`` names (``…/name/version``) or, without one, the newest stored version (of
    ``name``) free of activation blockers — the command line's rule, as ``pipeline.tagger.resolve``
    applies it on disk. Ensembles need their tagger's ``model_path`` there."""
    from pipeline.tagger.store import activation_blockers

    cfg = dict(config)
    if detector == "tagger":
        cfg.setdefault("model_dir", str(settings.BLINDSPOT_MODELS_DIR))
        if not is_local(models_storage()) and not cfg.get("model_path"):
            usable = [i for i in model_infos(cfg.get("name")) if not activation_blockers(i)]
            if not usable:
                raise StorageError(
                    f"no usable tagger version in the model store ({describe(models_storage(), '')}): "
                    "train one, or publish local versions with publish_models"
                )
            cfg["model_path"] = str(max(usable, key=lambda i: i.version).path)
    return localise_tagger_config(detector, cfg)
