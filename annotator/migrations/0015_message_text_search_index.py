"""A trigram index on messages' text, for the admin's message search (no request scans the corpus).

Django's ``icontains`` on PostgreSQL is ``UPPER(text) LIKE UPPER('%term%')``, which reads every
message unless a trigram index on ``UPPER(text)`` serves it. PostgreSQL only: ``pg_trgm`` is a
trusted extension (the database owner may create it); where it cannot be created the index is
left out with a warning, and search still works, by reading every message, as before.
"""

import warnings

from django.db import DatabaseError, migrations, transaction

INDEX = "message_text_trgm"


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            schema_editor.execute(
                f"CREATE INDEX IF NOT EXISTS {INDEX} ON annotator_message USING gin (UPPER(text) gin_trgm_ops)")
    except DatabaseError as exc:
        warnings.warn(f"No trigram index for the admin's message search ({exc}); search reads every message.",
                      stacklevel=1)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("annotator", "0014_assignment_queue_order_index"),
    ]

    operations = [migrations.RunPython(create, drop)]
