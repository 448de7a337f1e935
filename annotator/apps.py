from django.apps import AppConfig
from django.contrib.admin import AdminSite
from django.contrib.admin import apps as admin_apps


class SuperuserAdminSite(AdminSite):
    """The Django admin, for superusers only.

    Its model pages are site-wide: every project's messages, gold, mapping tables and memberships,
    and every account. A project's admin does their work on the app's own pages, which look each
    row up through ``annotator.access`` for the one project; scoping each model page, inline,
    autocomplete and foreign-key widget of the admin per project instead would be a second access
    layer to keep in step with the first, and one forgotten lookup reopens every project. Staff
    who are not superusers keep only the app's site-wide switch (deactivating an account)."""

    def has_permission(self, request) -> bool:
        return request.user.is_active and request.user.is_superuser


class BlindspotAdminConfig(admin_apps.AdminConfig):
    default = False  # named in INSTALLED_APPS; "annotator" itself is AnnotatorConfig
    default_site = "annotator.apps.SuperuserAdminSite"


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Blindspot"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import importlib

        from django.conf import settings
        from django.core import checks

        checks.register(_secret_key_check)
        checks.register(_surrogate_key_check, checks.Tags.security, deploy=True)

        for module in settings.BLINDSPOT_DETECTOR_PLUGINS:
            importlib.import_module(module)
        # Register every task by name in every process (web, commands, workers): services queue
        # them by name through annotator.dispatch and never import a task themselves.
        importlib.import_module("annotator.tasks")


def _secret_key_check(app_configs, **kwargs):
    from django.conf import settings
    from django.core import checks
    from django.core.exceptions import ImproperlyConfigured

    try:
        missing = not settings.SECRET_KEY
    except ImproperlyConfigured:  # Django refuses to hand out an empty SECRET_KEY
        missing = True
    if missing:
        return [checks.Error("SECRET_KEY is not set.", hint="Set SECRET_KEY in the environment or in .env "
                             "beside manage.py (./bin/demo writes one), or DEBUG=1 for a local demo.",
                             id="blindspot.E001")]
    return []


def _surrogate_key_check(app_configs, **kwargs):
    """``check --deploy``: the surrogate key is not the SECRET_KEY (the DEBUG default). One key
    for both means one leak both forges sessions and lets anyone recompute every surrogate of a
    release from the original names it guesses."""
    from django.conf import settings
    from django.core import checks
    from django.core.exceptions import ImproperlyConfigured

    try:
        same = bool(settings.BLINDSPOT_SURROGATE_KEY) and settings.BLINDSPOT_SURROGATE_KEY == settings.SECRET_KEY
    except ImproperlyConfigured:  # no SECRET_KEY: blindspot.E001 says so
        return []
    if same:
        return [checks.Warning("BLINDSPOT_SURROGATE_KEY is the SECRET_KEY.",
                               hint="Give BLINDSPOT_SURROGATE_KEY its own random value (./bin/demo writes one "
                                    "into .env); releases built after the change get new surrogates.",
                               id="blindspot.W001")]
    return []
