"""The record around the text: what a release does with every field of a dialogue.

A release is the whole import-format record, not only its messages' text, and real transcripts
carry people in all of it: speaker labels ("Caleb", "Ms. Carroll"), dialogue ids with a teacher's
surname ("…Year1.Benson.Fall.121019"), metadata ("teacher": "Ms. Okafor", a student's e-mail) and
timestamps. :class:`FieldPolicy` declares one policy per field, listed in the manifest and on the
release page (:meth:`FieldPolicy.table`), so a data steward can read what left as it came:

- ``speaker``: ``pseudonym`` (default) — a label that names someone (:mod:`pipeline.speakers`) is
  an original like a name in the text, and gets that person's surrogate in the dialogue's scope;
  role labels ("T2", "Student 3") stay; ``keep`` ships every label as it came;
- ``id``: ``keyed`` (default) — an opaque id, HMAC-SHA256 of the id under the surrogate key (the
  same key gives the same id on every rebuild; the original → released id rows are in the private
  mapping table); ``keep``;
- ``meta``: per key, ``scan`` (default: string values swept like the text — the corpus's
  originals and their parts replaced, the second opinion on the rest — numbers and booleans kept),
  ``keep`` or ``drop``; a key path names a nested key (``"school.name"``);
- ``ts``: ``shift`` (default) — moved by the dialogue's date offset, the one its DATE surrogates
  use, so intervals between messages are kept and the calendar day is not; ``keep`` or ``drop``;
- ``anchor`` (the word problem): swept and checked like text, always;
- message-level ``meta``: never released (its offsets point into the original text).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.speakers import DEFAULT_ROLE_LABELS, named_speakers, role_words
from pipeline.surrogates.formats import shift_date
from pipeline.surrogates.keyed import KeyedRandom
from pipeline.types import Dialogue

FIELD_RULES = "fields-1"
POLICIES: dict[str, tuple[str, ...]] = {
    "speaker": ("pseudonym", "keep"),
    "id": ("keyed", "keep"),
    "meta": ("scan", "keep", "drop"),
    "ts": ("shift", "keep", "drop"),
}
_ISO_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME_ONLY_RE = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?")
_EPOCH_RE = re.compile(r"\d{10}(?:\d{3})?")


class FieldPolicyError(ValueError):
    """A field policy that names an unknown field or policy."""


def _choice(name: str, value: Any) -> str:
    if value not in POLICIES[name]:
        raise FieldPolicyError(f"field policy {name!r} must be one of {', '.join(POLICIES[name])}, got {value!r}")
    return value


@dataclass(frozen=True)
class FieldPolicy:
    speaker: str = "pseudonym"
    id: str = "keyed"
    ts: str = "shift"
    meta: str = "scan"  # the default for metadata keys that ``meta_keys`` does not name
    meta_keys: Mapping[str, str] = field(default_factory=dict)  # key path -> scan | keep | drop
    role_labels: tuple[str, ...] = DEFAULT_ROLE_LABELS

    def __post_init__(self) -> None:
        for name in ("speaker", "id", "ts", "meta"):
            _choice(name, getattr(self, name))
        for key, value in self.meta_keys.items():
            if not isinstance(key, str) or not key:
                raise FieldPolicyError(f"a metadata key path must be a non-empty string, got {key!r}")
            _choice("meta", value)
        object.__setattr__(self, "_roles", role_words(self.role_labels))

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> FieldPolicy:
        """From ``{"speaker", "id", "ts", "meta", "meta_keys", "role_labels"}`` (all optional);
        anything else is an error that names what is known."""
        if config is not None and not isinstance(config, Mapping):
            raise FieldPolicyError("a field policy is an object: {\"speaker\": …, \"id\": …, \"ts\": …, \"meta\": …}")
        config = dict(config or {})
        config.pop("rules", None)  # written by to_dict: which version of these rules recorded it
        known = {"speaker", "id", "ts", "meta", "meta_keys", "role_labels"}
        unknown = sorted(set(config) - known)
        if unknown:
            raise FieldPolicyError(f"unknown field policy key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if not isinstance(config.get("meta_keys", {}), Mapping):
            raise FieldPolicyError("meta_keys must be an object of key path -> scan | keep | drop")
        roles = config.get("role_labels", DEFAULT_ROLE_LABELS)
        if isinstance(roles, str) or not all(isinstance(r, str) for r in roles):
            raise FieldPolicyError("role_labels must be a list of words")
        return cls(**{**config, "meta_keys": dict(config.get("meta_keys", {})),
                      "role_labels": tuple(roles)})

    def to_dict(self) -> dict[str, Any]:
        return {"rules": FIELD_RULES, "speaker": self.speaker, "id": self.id, "ts": self.ts, "meta": self.meta,
                "meta_keys": dict(sorted(self.meta_keys.items())), "role_labels": list(self.role_labels)}

    def table(self) -> list[dict[str, str]]:
        """One row per released field: its policy and what that does (the manifest, the page)."""
        rows = [
            {"field": "messages[].text", "policy": "spans replaced",
             "effect": "every span replaced; originals, their parts and speaker names swept; second opinion"},
            {"field": "anchor", "policy": "scan", "effect": "swept and checked like text"},
            {"field": "messages[].speaker", "policy": self.speaker,
             "effect": (f"a label that names someone gets that person's surrogate; role labels "
                        f"({len(self.role_labels)} role words) kept") if self.speaker == "pseudonym"
             else "every label shipped as it came"},
            {"field": "id", "policy": self.id,
             "effect": "HMAC-SHA256 under the surrogate key; original ids in the private mapping"
             if self.id == "keyed" else "shipped as it came"},
            {"field": "meta", "policy": self.meta, "effect": _META_EFFECT[self.meta] + " (keys not listed below)"},
            *({"field": f"meta.{key}", "policy": value, "effect": _META_EFFECT[value]}
              for key, value in sorted(self.meta_keys.items())),
            {"field": "messages[].ts", "policy": self.ts, "effect": _TS_EFFECT[self.ts]},
            {"field": "messages[].meta", "policy": "drop", "effect": "never released (offsets into the original)"},
        ]
        return rows

    def meta_policy(self, path: str) -> str:
        """The policy of a metadata key path: its own, its nearest listed parent's, or the default."""
        while path:
            if path in self.meta_keys:
                return self.meta_keys[path]
            path = path.rpartition(".")[0]
        return self.meta

    def speaker_names(self, dialogue: Dialogue) -> dict[str, str]:
        """``label -> name`` for the dialogue's speaker labels that name someone (none under ``keep``)."""
        if self.speaker != "pseudonym":
            return {}
        return named_speakers((m.speaker for m in dialogue.messages if m.speaker), self._roles)  # type: ignore[attr-defined]


_META_EFFECT = {"scan": "strings swept like text, numbers and booleans kept", "keep": "shipped as it came",
                "drop": "left out of the release"}
_TS_EFFECT = {"shift": "moved by the dialogue's date offset (intervals kept)", "keep": "shipped as it came",
              "drop": "left out of the release"}


def keyed_id(keyed: KeyedRandom, original: str) -> str:
    """The released id of a dialogue: opaque, the same under the same key, unrelated under another."""
    return "d-" + keyed.digest("dialogue-id", original).hex()[:20]


def shift_timestamp(value: str, days: int) -> str | None:
    """``value`` moved by ``days`` in its own format, unchanged when it holds no calendar date
    (a time of day, a lesson clock "00:03:12"), or ``None`` when it is not read (then it is dropped:
    a date left as it came would undo the shift of the text's dates)."""
    text = value.strip()
    if _TIME_ONLY_RE.fullmatch(text):
        return value
    if _EPOCH_RE.fullmatch(text):
        scale = 1000 if len(text) == 13 else 1
        return str(int(text) + days * 86400 * scale)
    m = _ISO_DATE_RE.match(text)
    if m:
        try:
            new = dt.date(int(m[1]), int(m[2]), int(m[3])) + dt.timedelta(days=days)
        except ValueError:
            return None
        return new.isoformat() + text[m.end():]
    return shift_date(text, days)


def meta_items(meta: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(key path, value)`` of every leaf of a metadata value (list items by position)."""
    if isinstance(meta, Mapping):
        for key, value in meta.items():
            yield from meta_items(value, f"{path}.{key}" if path else str(key))
    elif isinstance(meta, list | tuple):
        for k, value in enumerate(meta):
            yield from meta_items(value, f"{path}.{k}" if path else str(k))
    else:
        yield path, meta


def released_meta(meta: Any, policy: FieldPolicy, fix: Callable[[str, str], str], path: str = "") -> Any:
    """``meta`` as released under ``policy``: dropped keys left out, scanned strings through
    ``fix(key path, value)``, everything else as it came."""
    if isinstance(meta, Mapping):
        out = {}
        for key, value in meta.items():
            sub = f"{path}.{key}" if path else str(key)
            if policy.meta_policy(sub) != "drop":
                out[key] = released_meta(value, policy, fix, sub)
        return out
    if isinstance(meta, list | tuple):
        subs = ((f"{path}.{k}" if path else str(k), v) for k, v in enumerate(meta))
        return [released_meta(v, policy, fix, sub) for sub, v in subs if policy.meta_policy(sub) != "drop"]
    if isinstance(meta, str) and policy.meta_policy(path) == "scan":
        return fix(path, meta)
    return meta


def field_value(anchor: str, meta: Any, name: str) -> str | None:
    """The original string a place outside the messages names: ``"anchor"`` or ``"meta.<key path>"``
    (a list item by its position), or ``None`` when the dialogue no longer has it."""
    if name == "anchor":
        return anchor
    if not name.startswith("meta."):
        return None
    value = meta
    for key in name.removeprefix("meta.").split("."):
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value if isinstance(value, str) else None


def field_title(name: str) -> str:
    """A place outside the messages in a reviewer's words."""
    return "the word problem" if name == "anchor" else f"metadata “{name.removeprefix('meta.')}”"
