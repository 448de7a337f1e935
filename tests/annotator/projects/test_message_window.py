"""The one window of context around a message, which the workspace, adjudication and the release
review all show: centred on the message, cut at the dialogue's edges, never another dialogue's."""

import pytest

from annotator.selectors.projects import message_window
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db


def positions(corpus, dialogue: str, position: int, size: int) -> list[tuple[str, int]]:
    return [(m.dialogue.external_id, m.position) for m in message_window(msg(corpus, dialogue, position), size)]


def test_the_window_is_centred_and_cut_at_the_dialogues_edges(corpus):
    assert positions(corpus, "d1", 1, 3) == [("d1", 0), ("d1", 1), ("d1", 2)]
    assert positions(corpus, "d1", 0, 3) == [("d1", 0), ("d1", 1)]
    assert positions(corpus, "d1", 3, 5) == [("d1", 1), ("d1", 2), ("d1", 3)]
    assert positions(corpus, "d2", 0, 5) == [("d2", 0), ("d2", 1)]  # d1's messages stay out


def test_a_window_of_one_or_none_is_the_message_alone(corpus):
    assert positions(corpus, "d1", 2, 1) == [("d1", 2)]
    assert positions(corpus, "d1", 2, 0) == [("d1", 2)]
