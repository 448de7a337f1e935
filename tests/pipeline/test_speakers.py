"""Speaker labels that name a person become originals; role labels stay as they are."""

import pytest

from pipeline.speakers import named_speakers, role_words, speaker_name
from pipeline.text import fold


@pytest.mark.parametrize("label", ["T", "T2", "S", "SS", "Teacher", "Student 3", "Speaker 2", "All students",
                                   "student", "Student A", "[STUDENT]", "Ms. H", "Multiple students", ""])
def test_role_labels_are_not_names(label):
    assert speaker_name(label) is None


@pytest.mark.parametrize(("label", "name"), [
    ("Caleb", "Caleb"), ("Lee", "Lee"), ("Ms. Carroll", "Ms. Carroll"), ("Ms.Carroll", "Ms. Carroll"),
    ("Maria Lopez", "Maria Lopez"), ("Mr. Benson:", "Mr. Benson"), ("Student Caleb", "Caleb"),
    ("Caleb (S)", "Caleb"), ("O'Brien", "O'Brien"), ("Mrs Okafor", "Mrs Okafor"), ("José", "José"),
])
def test_labels_that_name_someone(label, name):
    assert speaker_name(label) == name


def test_a_project_list_of_role_words_replaces_the_default():
    roles = role_words(["T", "S", "Coach"])
    assert speaker_name("Teacher", roles) == "Teacher"  # not a role word of this project
    assert speaker_name("T2", roles) is None
    assert named_speakers(["T", "Caleb", "Caleb", "Ms.Carroll"], roles) == {"Caleb": "Caleb",
                                                                            "Ms.Carroll": "Ms. Carroll"}


def test_fold_keeps_length_and_drops_case_accents_and_curly_apostrophes():
    for text, folded in [("JOSÉ", "jose"), ("Zoë", "zoe"), ("Maria’s", "maria's"), ("ŁÓDŹ", "lodz")]:
        assert fold(text) == folded
        assert len(fold(text)) == len(text)
