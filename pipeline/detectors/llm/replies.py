"""From a prompt file to a request, and from the model's reply to located strings (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.llm_client import reply_json
from pipeline.prompting import PROMPTS_DIR, Prompt, PromptError

__all__ = ["PROMPTS_DIR", "Prompt", "PromptError", "Unparsable", "locate", "normalise_label", "parse_reply"]

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
    """The model's reply is not the JSON object the prompt asks for."""


def parse_reply(content: str) -> list[tuple[str, str]]:
    """``(text, raw label)`` pairs from a reply; raises :class:`Unparsable` with the reason."""
    try:
        data = reply_json(content)
    except ValueError as exc:
        raise Unparsable(f"not valid JSON ({exc.msg} at character {exc.pos})") from None
    items = data.get("pii") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise Unparsable('the object has no "pii" list')
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise Unparsable(f'item {item!r} is not {{"text": "...", "label": "..."}}')
        label = next((item[k] for k in ("label", "type", "entity") if k in item), None)
        if not isinstance(label, str):
            raise Unparsable(f"item {item!r} has no label")
        if item["text"].strip():
            out.append((item["text"], label))
    return out


def normalise_label(raw: str, labels: Sequence[str]) -> str | None:
    key = re.sub(r"[\s\-]+", "_", raw.strip()).upper()
    if key in labels:
        return key
    alias = LABEL_ALIASES.get(key)
    if alias in labels:
        return alias
    return "OTHER_IDENTIFIER" if "OTHER_IDENTIFIER" in labels else None


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
