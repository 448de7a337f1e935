"""The model-version registry: trained tagger versions (``name/version``) in the ``models``
storage (:mod:`annotator.storage`), so that any machine can run a version another trained.

A version is written by ``pipeline/`` to the local models directory as ever, then published
(:func:`model_publish`): its files first, then ``published.json`` (every file's name, size and
SHA-256), so a version is listed only once it is complete. A worker materialises a version into
its own models directory, now a cache, verified against that list before anything loads it
(:func:`model_materialise`). On local storage the models directory is the store and nothing is
copied. Run configs are given a path on this machine by :func:`localise_tagger_config` (a run's
recorded config) and :func:`command_detector_config` (a command line's: ``--model`` or the default
version that :func:`model_default_set` records, never the newest).

``pipeline/`` knows nothing of this: it reads and writes local paths only.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage
from django.utils import timezone

from annotator.storage import (
    CHUNK,
    StorageError,
    describe,
    is_local,
    local_files,
    models_storage,
    open_file,
    storage_key,
    upload_tree,
    walk,
)
from pipeline.detectors.ensemble import with_member_configs
from pipeline.hashing import sha256_file
from pipeline.tagger import list_models
from pipeline.tagger.store import (
    DEFAULT_FILE,
    META_FILE,
    ModelInfo,
    ModelNotFoundError,
    activation_blockers,
    default_version,
    read_info,
    set_default,
)

PUBLISHED = "published.json"  # a version's file list, uploaded last
_verified: dict[str, str] = {}  # local model directory -> the file list this process checked it against



def file_list(root: Path) -> list[dict[str, Any]]:
    """Name, size and SHA-256 of every file of a model version directory (the list itself aside)."""
    return [
        {"name": n, "size": (root / n).stat().st_size, "sha256": sha256_file(root / n)}
        for n in local_files(root)
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
    storage.delete(storage_key(version, PUBLISHED))  # unlisted while its files change
    for key in walk(storage, version):
        if posixpath.relpath(key, version) not in {f["name"] for f in listing["files"]}:
            storage.delete(key)
    upload_tree(storage, root, version, last=[PUBLISHED])


def _published(storage: Storage, version: str) -> dict[str, Any]:
    try:
        with open_file(storage, storage_key(version, PUBLISHED)) as fh:
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
            with open_file(storage, storage_key(version, f["name"])) as src, open(dest, "wb") as out:
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
        if not v.startswith(".") and storage.exists(storage_key(n, v, PUBLISHED))
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
    try:
        path = model_local_dir(version)
    except StorageError as exc:
        raise ModelNotFoundError(str(exc)) from None
    storage = models_storage()
    if is_local(storage):
        return read_info(path)
    if not storage.exists(storage_key(version, PUBLISHED)):
        raise ModelNotFoundError(
            f"model {version} is not in the model store ({describe(storage, version)})"
        )
    with open_file(storage, storage_key(version, META_FILE)) as fh:
        return ModelInfo.from_dict(json.loads(fh.read().decode("utf-8")), path)


def model_infos(name: str | None = None) -> list:
    """Every complete stored version (of one ``name``), oldest first, as ``ModelInfo``; a damaged
    one is skipped, as :func:`pipeline.tagger.list_models` does on disk."""
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
    members (:func:`pipeline.detectors.ensemble.with_member_configs`). Unchanged on local storage."""
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
        cfg = with_member_configs(cfg, localise_tagger_config)
    return cfg


def model_default() -> str | None:
    """The default version (``name/version``) that a command without a project runs: the models
    root's ``default.json`` (:func:`pipeline.tagger.store.set_default`), read from the model store
    (where it is published by :func:`model_default_set`) or, on local storage, the models directory."""
    storage = models_storage()
    if is_local(storage):
        return default_version(storage.location)
    try:
        with open_file(storage, DEFAULT_FILE) as fh:
            version = json.loads(fh.read().decode("utf-8")).get("version")
    except StorageError:
        return None
    except (ValueError, AttributeError) as exc:
        raise StorageError(f"the model store's {DEFAULT_FILE} is damaged ({exc}); set the default again") from None
    return version if isinstance(version, str) and version else None


def model_default_set(version: str, *, by: str) -> ModelInfo:
    """Make ``name/version`` the default (``ModelNotFoundError`` when it does not exist or has
    activation blockers): written atomically into this machine's models directory and, on a remote
    store, published there too, so every machine's commands run the same default."""
    info = model_info(version)
    set_default(settings.BLINDSPOT_MODELS_DIR, info, by=by)
    storage = models_storage()
    if not is_local(storage):
        local = Path(settings.BLINDSPOT_MODELS_DIR) / DEFAULT_FILE
        storage.delete(DEFAULT_FILE)  # else the store may save under another name
        with open(local, "rb") as fh:
            storage.save(DEFAULT_FILE, File(fh, name=DEFAULT_FILE))
    return info


def _chosen_version(config: dict[str, Any], model: str | None) -> str:
    """The version a command's tagger runs: ``model`` (``--model``), the config's ``version``,
    else the default; a ``StorageError`` saying what to run when there is none or it is blocked."""
    version = model or config.pop("version", None)
    if version:
        return version
    default = model_default()
    if default is None:
        raise StorageError(
            "no tagger version chosen and no default one: pass --model NAME/VERSION (manage.py "
            "tagger_versions lists them), or make one the default (manage.py train_tagger --project SLUG "
            "publishes its version as the default; or tagger_activate VERSION --project SLUG --default)"
        )
    try:
        blockers = activation_blockers(model_info(default))
    except ModelNotFoundError as exc:
        raise StorageError(f"the default tagger {default} is missing ({exc}); set another default") from None
    if blockers:
        raise StorageError(f"the default tagger {default} is blocked: {'; '.join(blockers)}; set another default")
    return default


def command_detector_config(detector: str, config: Mapping[str, Any], *, model: str | None = None) -> dict[str, Any]:
    """A command line's detector config (``detect``, ``deidentify``) whose tagger (an ensemble's
    too) runs the one version the rule picks: ``model`` (``--model NAME/VERSION``) or the config's
    ``version``, else the default (:func:`model_default`), never "the newest"; fetched into this
    machine's models directory from an object store first."""
    cfg = dict(config)
    if detector == "ensemble":
        if cfg.get("members") is None:  # the default members: their tagger is chosen here
            cfg["tagger"] = cfg.get("tagger") or {}
        return with_member_configs(cfg, lambda name, member: command_detector_config(name, member, model=model))
    if detector == "tagger" and not cfg.get("model_path"):
        version = _chosen_version(cfg, model)
        try:
            model_info(version)
        except ModelNotFoundError as exc:
            raise StorageError(f"{exc} (manage.py tagger_versions lists the versions)") from None
        cfg["model_path"] = str(model_local_dir(version))
    if detector == "tagger":
        cfg.setdefault("model_dir", str(settings.BLINDSPOT_MODELS_DIR))
    return localise_tagger_config(detector, cfg)
