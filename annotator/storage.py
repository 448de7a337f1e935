"""Files that outlive a job — export and release bundles, uploads, the files of trained tagger
versions — through Django's storage API, so that any machine can write them and any other can
read them.

Three aliases of ``settings.STORAGES``: ``exports``, ``models`` and ``uploads``. By default they
are the local directories ``BLINDSPOT_EXPORTS_DIR``, ``BLINDSPOT_MODELS_DIR`` and
``BLINDSPOT_UPLOADS_DIR`` (:class:`LocalDirStorage`) and
nothing here copies anything: files are written where they stay. With ``BLINDSPOT_STORAGE_URL``
they are S3 storages (django-storages), and then:

- a bundle is built in a local staging directory (:func:`work_dir`) and uploaded once complete
  (:func:`publish_tree`); downloads stream from the store (:func:`open_file`);
- an uploaded corpus is stored by the web process and read by the import job wherever it runs
  (:func:`upload_save`, :func:`upload_path`);
- trained tagger versions live in the ``models`` storage, published and fetched by the model
  registry (:mod:`annotator.model_store`), which uses the trees and files here.

``pipeline/`` knows nothing of this: it reads and writes local paths only.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
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

EXPORTS, MODELS, UPLOADS = "exports", "models", "uploads"
CHUNK = 1 << 20


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


def storage_key(*parts: str) -> str:
    """``parts`` joined into a key; ``SuspiciousOperation`` for one that climbs out of the store."""
    key = posixpath.join(*parts)
    if key.startswith("/") or ".." in key.split("/"):
        raise SuspiciousOperation(f"{key!r} is not a storage key")
    return key


# ----------------------------------------------------------------------------------- trees


def work_dir(storage: Storage, key: str) -> Path:
    """The local directory files stored under ``key`` are written to: the final place on local
    storage; a staging directory (uploaded by :func:`publish_tree`) on a remote one."""
    if is_local(storage):
        return Path(storage.path(storage_key(key)))
    return Path(settings.BLINDSPOT_STAGING_DIR) / storage_key(key)


def walk(storage: Storage, prefix: str) -> Iterator[str]:
    """The key of every file under ``prefix`` (recursively)."""
    try:
        dirs, files = storage.listdir(storage_key(prefix))
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


def local_files(root: Path) -> list[str]:
    """The relative path of every file under ``root``, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def upload_tree(
    storage: Storage, root: Path, prefix: str, *, last: Iterable[str] = ()
) -> list[str]:
    """Upload every file under ``root`` to ``prefix/<relative path>``, the names in ``last`` after
    all others (a reader that waits for them then finds the rest)."""
    last = [n for n in last if (root / n).is_file()]
    names = [n for n in local_files(root) if n not in last] + last
    for name in names:
        with open(root / name, "rb") as fh:
            storage.save(storage_key(prefix, name), File(fh, name=name))
    return names


def publish_tree(storage: Storage, root: Path, prefix: str, *, last: Iterable[str] = (),
                 replace: bool = True) -> None:
    """Make the files built in ``root`` (see :func:`work_dir`) the stored contents of ``prefix``:
    nothing to do on local storage; on a remote one, replace what an earlier attempt left there
    (unless ``replace`` is False: then they are added to it), upload, and drop the staging
    directory. Safe to repeat."""
    if is_local(storage) or not root.is_dir():
        return
    if replace:
        delete_tree(storage, prefix)
    upload_tree(storage, root, prefix, last=last)
    shutil.rmtree(root)


def download_tree(storage: Storage, prefix: str, target: Path) -> list[str]:
    """Copy every file under ``prefix`` into ``target`` (kept relative paths)."""
    names = [posixpath.relpath(k, prefix) for k in walk(storage, prefix)]
    for name in names:
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        with storage.open(storage_key(prefix, name), "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
    return names


def open_file(storage: Storage, key: str) -> File:
    """The stored file at ``key``, open for reading; ``StorageError`` when it is not there."""
    try:
        key = storage_key(key)
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
        yield Path(store.path(storage_key(params["upload"])))
        return
    suffix = Path(params["upload"]).suffix
    with tempfile.NamedTemporaryFile(suffix=suffix) as out:
        with open_file(store, params["upload"]) as src:
            shutil.copyfileobj(src, out, CHUNK)
        out.flush()
        yield Path(out.name)
