"""Projects, their members, and the corpus: dialogues and messages."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from annotator.models.fields import JSONField
from pipeline.surrogates.fields import FieldPolicy, FieldPolicyError
from pipeline.types import DEFAULT_TAXONOMY


def default_taxonomy() -> list[dict]:
    return [
        {"label": d.label, "description": d.description, "color": d.color}
        for d in DEFAULT_TAXONOMY
    ]


DEFAULT_GUIDELINES = """\
# Labelling guidelines

Mark every string that could identify a **real participant** (student, tutor, parent, teacher).

* **NAME** — "Hi Maria", "good job maria", "Ms. Lopez said". Not word-problem characters under the
  *strict* policy ("If Alex has 5 apples"), not placeholders such as `Student A` or `[STUDENT]`.
* **Numbers are teaching content** — "9351 / 7", "3/4", "2024" in a problem, "3:45", "$4.50" are
  never PII. A phone number, a student id or a birthday is.
* Select whole words; leave out punctuation and the possessive 's.
* Unsure? Mark the item uncertain and add a comment: the adjudicator will see it.
"""


class Project(models.Model):
    class Visibility(models.TextChoices):
        BLIND = "blind", "Blind: annotators never see the model"
        AWARE = "aware", "Aware: annotators see the model's suggestions"
        RANDOMIZED = "randomized", "Randomized: blind or aware per assignment (circularity check)"

    class Policy(models.TextChoices):
        STRICT = "strict", "Strict: word-problem characters are not PII (MathEd-PII)"
        RECALL_FIRST = "recall_first", "Recall first: word-problem characters are potential PII (PIIvot)"

    class MergeRule(models.TextChoices):
        UNANIMOUS = "unanimous", "Unanimous only"
        MAJORITY = "majority", "Majority"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    taxonomy = JSONField(default=default_taxonomy)
    guidelines = models.TextField(default=DEFAULT_GUIDELINES, blank=True)
    visibility_mode = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.BLIND
    )
    overlap_k = models.PositiveSmallIntegerField(default=2, help_text="Annotators per item.")
    context_window = models.PositiveSmallIntegerField(
        default=3, help_text="Messages shown: previous, target, next."
    )
    labelling_policy = models.CharField(max_length=16, choices=Policy.choices, default=Policy.STRICT)
    merge_rule = models.CharField(max_length=16, choices=MergeRule.choices, default=MergeRule.UNANIMOUS)
    show_predictions_to_adjudicators = models.BooleanField(default=False)
    second_opinion_tagger = models.BooleanField(
        default=True, help_text="A release's self-audit also runs the project's active tagger (recall first) "
                                "over the released text.")
    second_opinion_presidio = models.BooleanField(
        default=True, help_text="A release's self-audit also runs Presidio (tuned) over the released text.")
    release_fields = JSONField(
        default=dict, blank=True,
        help_text="How a release treats the record around the texts: speaker labels, ids, metadata, timestamps "
                  "(pipeline.surrogates.fields.FieldPolicy; {} is its defaults).")
    suggestion_runs = models.ManyToManyField(
        "annotator.DetectorRun", blank=True, related_name="+",
        help_text="Runs whose predictions aware annotators see as suggestions.",
    )
    active_tagger = models.CharField(max_length=200, blank=True, help_text="Tagger model version in use.")
    retrain_every = models.PositiveIntegerField(
        default=0, help_text="Retrain the tagger after this many new gold messages (0: only on demand).")
    retrain_gold_mark = models.PositiveIntegerField(
        default=0, help_text="Gold messages when the last retrain was queued.")
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(overlap_k__gte=1), name="project_overlap_k_positive"),
            models.CheckConstraint(
                condition=models.Q(context_window__gte=1), name="project_context_window_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def labels(self) -> list[str]:
        return [d["label"] for d in self.taxonomy]

    def clean(self) -> None:
        validate_taxonomy(self.taxonomy)
        try:
            self.field_policy()
        except FieldPolicyError as exc:
            raise ValidationError({"release_fields": str(exc)}) from None

    def field_policy(self) -> FieldPolicy:
        """What a release does with the record around the texts (the defaults when unset)."""
        return FieldPolicy.from_config(self.release_fields)


# A label colour goes into the labels stylesheet every annotator loads: only "#rrggbb", so it can
# never close the declaration and add CSS of its own (``red;background-image:url(…)``).
COLOR_RE = re.compile(r"#[0-9a-fA-F]{6}")


def is_color(value) -> bool:
    return isinstance(value, str) and COLOR_RE.fullmatch(value) is not None


def validate_taxonomy(taxonomy) -> None:
    """The one check of a taxonomy, for the settings form, ``Project.clean`` and any import.

    A label's key is its place in the list (annotator/selectors/keymap.py), so an entry has no key
    of its own; the letter ``key`` that taxonomies stored before carry is ignored, never refused."""
    if not isinstance(taxonomy, list) or not taxonomy:
        raise ValidationError("The taxonomy must be a non-empty list of labels.")
    seen_labels = set()
    for entry in taxonomy:
        if not isinstance(entry, dict) or not entry.get("label"):
            raise ValidationError("Each taxonomy entry needs a 'label'.")
        label = entry["label"]
        if "color" in entry and not is_color(entry["color"]):
            raise ValidationError(f"The colour of {label} must be #rrggbb (six hex digits), got {entry['color']!r}.")
        if label in seen_labels:
            raise ValidationError(f"Label {label} is used twice.")
        seen_labels.add(label)


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    ADJUDICATOR = "adjudicator", "Adjudicator"
    ADMIN = "admin", "Admin"


ROLE_RANK = {Role.ANNOTATOR: 1, Role.ADJUDICATOR: 2, Role.ADMIN: 3}


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    pseudonym = models.CharField(max_length=40, blank=True, help_text="Shown instead of the username in exports.")
    active = models.BooleanField(
        default=True, help_text="Off once removed from the project: the row stays, so the member's past work "
                                "keeps its pseudonym, but it gives no access.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} — {self.role} in {self.project}"

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


class Dialogue(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="dialogues")
    external_id = models.CharField(max_length=200)
    anchor = models.TextField(blank=True, help_text="The question or word problem the dialogue is about.")
    meta = JSONField(default=dict, blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="The file it was imported from.")
    message_count = models.PositiveIntegerField(
        default=0, help_text="Its messages, kept by the import that writes them: a run is planned from these "
                             "counters instead of counting the message table in the request.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="dialogue_unique_external_id")
        ]

    def __str__(self) -> str:
        return self.external_id


class Message(models.Model):
    class SpeakerRole(models.TextChoices):
        TUTOR = "tutor", "Tutor"
        STUDENT = "student", "Student"
        OTHER = "other", "Other"

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="messages")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="messages")
    position = models.PositiveIntegerField()
    speaker_role = models.CharField(max_length=8, choices=SpeakerRole.choices, default=SpeakerRole.OTHER)
    speaker = models.CharField(max_length=200)
    text = models.TextField()
    ts = models.CharField(max_length=64, blank=True, help_text="The timestamp as written in the source.")
    meta = JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dialogue_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "position"], name="message_unique_position")
        ]
        indexes = [models.Index(fields=["project", "dialogue", "position"], name="message_project_order")]

    def __str__(self) -> str:
        return f"{self.dialogue_id}#{self.position}"
