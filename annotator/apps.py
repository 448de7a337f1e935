from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Blindspot"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import importlib

        from django.conf import settings

        for module in settings.BLINDSPOT_DETECTOR_PLUGINS:
            importlib.import_module(module)
