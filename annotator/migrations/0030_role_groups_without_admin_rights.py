"""The role groups no longer carry Django-admin rights: the admin is for superusers only
(``annotator.apps.SuperuserAdminSite``), and rights given to a group are site-wide, never scoped
to the projects where its members hold the role. The groups stay as markers of the roles held."""

from django.db import migrations

ADJUDICATOR_VIEW = ["project", "dialogue", "message", "goldspan", "adjudicationdecision", "detectorrun"]


def drop_rights(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for group in Group.objects.filter(name__in=["Admin", "Adjudicator"]):
        group.permissions.remove(*group.permissions.filter(content_type__app_label="annotator"))


def give_rights_back(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    perms = Permission.objects.filter(content_type__app_label="annotator")
    for group in Group.objects.filter(name="Admin"):
        group.permissions.add(*perms)
    for group in Group.objects.filter(name="Adjudicator"):
        group.permissions.add(*perms.filter(codename__in=[f"view_{m}" for m in ADJUDICATOR_VIEW]))


class Migration(migrations.Migration):
    dependencies = [("annotator", "0029_adjudication_cursor")]
    operations = [migrations.RunPython(drop_rights, give_rights_back)]
