"""Migration 0029 gives every existing adjudication item its message's dialogue and position
(the queue's cursor), on SQLite and PostgreSQL, and goes back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotator", "0028_release_chunks")]
AFTER = [("annotator", "0029_adjudication_cursor")]


def _executor() -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor


@pytest.mark.django_db(transaction=True)
def test_existing_items_get_their_message_s_dialogue_and_position():
    executor = _executor()
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    project = old.get_model("annotator", "Project").objects.create(name="P", slug="p")
    Dialogue, Message = old.get_model("annotator", "Dialogue"), old.get_model("annotator", "Message")
    Item = old.get_model("annotator", "AdjudicationItem")
    places = {}
    for name in ("a", "b"):
        dialogue = Dialogue.objects.create(project=project, external_id=name)
        for position in (0, 7):
            message = Message.objects.create(project=project, dialogue=dialogue, position=position, speaker="s",
                                             text="x")
            places[Item.objects.create(project=project, message=message, risk=2).pk] = (dialogue.pk, position)

    executor = _executor()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    Item = new.get_model("annotator", "AdjudicationItem")
    assert {i.pk: (i.dialogue_id, i.position) for i in Item.objects.all()} == places

    executor = _executor()
    executor.migrate(BEFORE)  # and back
    assert executor.loader.project_state(BEFORE).apps.get_model(
        "annotator", "AdjudicationItem").objects.count() == len(places)
    executor = _executor()
    executor.migrate(executor.loader.graph.leaf_nodes("annotator"))
