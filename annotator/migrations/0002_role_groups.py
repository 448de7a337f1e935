"""The three role groups. Project-level roles live on Membership; the groups carry Django-admin rights."""

from django.db import migrations

ADMIN_MODELS = "__all__"
ADJUDICATOR_VIEW = ["project", "dialogue", "message", "goldspan", "adjudicationdecision", "detectorrun"]


def create_groups(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    app_config = apps.get_app_config("annotator")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    perms = Permission.objects.filter(content_type__app_label="annotator")
    admin, _ = Group.objects.get_or_create(name="Admin")
    admin.permissions.set(perms)
    adjudicator, _ = Group.objects.get_or_create(name="Adjudicator")
    adjudicator.permissions.set(perms.filter(codename__in=[f"view_{m}" for m in ADJUDICATOR_VIEW]))
    Group.objects.get_or_create(name="Annotator")


def drop_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["Admin", "Adjudicator", "Annotator"]).delete()


class Migration(migrations.Migration):
    dependencies = [("annotator", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_groups, drop_groups)]
