"""From a prompt file to a request, and from the model's reply to located strings (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.llm_client import reply_json
from pipeline.prompting import PROMPTS_DIR, Prompt, PromptError

__all__ = [
    "PROMPTS_DIR",
    "Prompt",
    "PromptError",
    "Unparsable",
    "is_placeholder",
    "locate",
    "normalise_label",
    "parse_reply",
]

# What models say instead of the project's labels; used only when the target label is configured.
LABEL_ALIASES = {
    "PERSON": "NAME",
    "PER": "NAME",
    "FIRST_NAME": "NAME",
    "LAST_NAME": "NAME",
    "FULL_NAME": "NAME",
    "STUDENT_NAME": "NAME",
    "TUTOR_NAME": "NAME",
    "SCHOOL_NAME": "SCHOOL",
    "ADDRESS": "LOCATION",
    "STREET_ADDRESS": "LOCATION",
    "CITY": "LOCATION",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "DOB": "DATE_OF_BIRTH",
    "BIRTHDAY": "DATE_OF_BIRTH",
    "BIRTH_DATE": "DATE_OF_BIRTH",
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "TELEPHONE": "PHONE",
    "WEBSITE": "URL",
    "LINK": "URL",
    "HANDLE": "USERNAME",
    "USER_NAME": "USERNAME",
    "SOCIAL_MEDIA_HANDLE": "USERNAME",
    "ID": "ID_NUMBER",
    "STUDENT_ID": "ID_NUMBER",
    "ID_NUM": "ID_NUMBER",
    "COURSE_CODE": "COURSE",
}


class Unparsable(ValueError):
    """The model's reply is not the JSON object the prompt asks for; ``kind`` names the problem
    (``unparsable``, or ``placeholder`` for a reply that copies the prompt's template)."""

    def __init__(self, message: str, kind: str = "unparsable") -> None:
        super().__init__(message)
        self.kind = kind


# What a model copies from the prompt's template instead of answering: "<exact string ...>",
# "<one of the labels>", "...". Such an item names nothing in the message.
_PLACEHOLDER = re.compile(r"<[^<>]*>|\.{2,}|…", re.S)


def is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.fullmatch(value.strip()))


def parse_reply(content: str) -> list[tuple[str, str]]:
    """``(text, raw label)`` pairs from a reply; raises :class:`Unparsable` with the reason.

    Small models say "nothing" and "one thing" in more ways than the prompt shows, all of them
    unambiguous: an empty reply, ``{}``, ``null`` or ``{"pii": null}`` is no PII; a lone item
    (bare or under ``"pii"``) is a list of one; a bare list is the list. Anything else is
    refused rather than guessed at: a guess of "no PII" would be a leak nobody sees."""
    if not content.strip():
        return []
    try:
        data = reply_json(content)
    except ValueError as exc:
        raise Unparsable(f"not valid JSON: {exc}") from None
    if isinstance(data, dict):
        if "pii" in data:
            items = data["pii"]
        elif "text" in data:  # a lone item
            items = data
        elif not data:
            items = None
        else:
            raise Unparsable('the object has no "pii" list')
    else:
        items = data
    if items is None:
        return []
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise Unparsable('the object has no "pii" list')
    out = [pair for item in items if (pair := _pair(item))[0].strip()]
    if out and all(is_placeholder(text) or is_placeholder(label) for text, label in out):
        raise Unparsable("the reply repeats the template's placeholders instead of strings from the "
                         "target message", kind="placeholder")
    return out


def _pair(item: object) -> tuple[str, str]:
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        raise Unparsable(f'item {item!r} is not {{"text": "...", "label": "..."}}')
    label = next((item[k] for k in ("label", "type", "entity") if k in item), None)
    if not isinstance(label, str):
        raise Unparsable(f"item {item!r} has no label")
    return item["text"], label


def normalise_label(raw: str, labels: Sequence[str]) -> str | None:
    """The configured label ``raw`` names (itself or a common alias), else ``None``: a label
    outside the taxonomy is the caller's problem to count, never mapped silently."""
    key = re.sub(r"[\s\-]+", "_", raw.strip()).upper()
    if key in labels:
        return key
    alias = LABEL_ALIASES.get(key)
    return alias if alias in labels else None


_QUOTES = "\"'“”‘’`"


def locate(needle: str, text: str) -> list[tuple[int, int]]:
    """Every occurrence of ``needle`` in ``text``: exact and word-bounded first, then looser."""
    needle = needle.strip()
    if len(needle) > 1 and needle[0] in _QUOTES and needle[-1] in _QUOTES:
        needle = needle[1:-1].strip()
    if not needle:
        return []
    body = r"\s+".join(re.escape(part) for part in needle.split())
    left = r"(?<!\w)" if re.match(r"\w", needle[0]) else ""
    right = r"(?!\w)" if re.match(r"\w", needle[-1]) else ""
    for flags in (0, re.IGNORECASE):
        for pattern in (left + body + right, body):
            found = [(m.start(), m.end()) for m in re.finditer(pattern, text, flags)]
            if found:
                return found
    return []
