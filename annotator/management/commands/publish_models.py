"""``manage.py publish_models [NAME/VERSION ...]``: put tagger versions trained before an object
store was configured (or copied in by hand) into the model store, so workers elsewhere can run them."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotator import model_store, storage


class Command(BaseCommand):
    help = ("Publish tagger versions from this machine's BLINDSPOT_MODELS_DIR to the model store "
            "(BLINDSPOT_STORAGE_URL): every version there, or the NAME/VERSIONs given. Safe to repeat.")

    def add_arguments(self, parser):
        parser.add_argument("versions", nargs="*", metavar="NAME/VERSION", help="Versions to publish (default: all).")

    def handle(self, versions, **opts):
        if storage.is_local(storage.models_storage()):
            raise CommandError("The model store is the local models directory (BLINDSPOT_STORAGE_URL is unset): "
                               "there is nothing to publish.")
        root = Path(settings.BLINDSPOT_MODELS_DIR)
        try:
            paths = [model_store.model_local_dir(v) for v in versions] or sorted(
                m.parent for m in root.glob("*/*/tagger.json")
                if not m.parent.name.startswith(".") and not m.parent.parent.name.startswith(".")
            )
        except storage.StorageError as exc:
            raise CommandError(str(exc)) from None
        missing = [str(p) for p in paths if not (p / "tagger.json").is_file()]
        if missing:
            raise CommandError(f"Not a tagger version directory (no tagger.json): {', '.join(missing)}")
        if not paths:
            raise CommandError(f"No tagger version under {root}.")
        for path in paths:
            model_store.model_publish(path)
            version = f"{path.parent.name}/{path.name}"
            self.stdout.write(f"{version} -> {storage.describe(storage.models_storage(), version)}")
        self.stdout.write(self.style.SUCCESS(f"Published {len(paths)} version(s)."))
