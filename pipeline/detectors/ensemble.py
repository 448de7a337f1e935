"""Union or majority vote over other detectors' spans, with overlap resolution.

``union`` is recall-first (PIIvot's argument: a missed name leaks, an extra span costs a click):
every span any member finds survives, and overlapping spans become one. ``majority`` keeps a
group of overlapping spans only when enough members voted for it (more than half by default).

Overlapping spans from different members form a group (connected by overlap). A group becomes one
span: ``"hull"`` covers the whole group (recall-first), ``"best"`` keeps the member span with the
most identical votes, then the highest score, then the longest. The label is the score-weighted
majority of the members' labels. A member's MATH / NON-MATH segment (from ``math_segments``)
passes through.

Without ``members`` the ensemble is the default one (:func:`default_members`): the tagger (with
``tagger`` as its config, resolved the tagger detector's own way), the rules detector limited
to structured identifiers (e-mails, phones, URLs, usernames, ids), whose patterns leave the maths
alone, and ``speakers`` (the mentions of the dialogue's named speakers, with ``speakers`` as its
config: a project's ``roles``); ``presidio: true`` (or a Presidio config) adds Presidio ``tuned``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pipeline.detectors.base import BaseDetector, ConfigError, Detector
from pipeline.registry import build, register
from pipeline.types import Detection, Dialogue, Span

MODES = ("union", "majority")
RESOLUTIONS = ("hull", "best")
# what the rules detector finds by pattern alone: maths-safe, no guess about a word
STRUCTURED_LABELS = ("EMAIL", "URL", "PHONE", "USERNAME", "ID_NUMBER")


def default_members(
    tagger: Mapping[str, Any] | None = None, presidio: bool | Mapping[str, Any] = False,
    speakers: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The default ensemble: tagger + rules for structured identifiers + the speakers' names
    (+ Presidio tuned)."""
    members: list[dict[str, Any]] = [
        {"name": "tagger", "config": dict(tagger or {})},
        {"name": "rules", "config": {"labels": list(STRUCTURED_LABELS)}},
        {"name": "speakers", "config": dict(speakers or {})},
    ]
    if presidio:
        extra = dict(presidio) if isinstance(presidio, Mapping) else {}
        members.append({"name": "presidio", "config": {"preset": "tuned", **extra}})
    return members


def with_member_configs(
    config: Mapping[str, Any], fn: Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
) -> dict[str, Any]:
    """A copy of an ensemble's ``config`` with ``fn(name, member_config)`` in place of each
    member's config: the default tagger and speakers members' (``tagger``, ``speakers``, when there
    are no ``members``) or
    that of each ``{name, config}`` in ``members``. Anything malformed is left as it is, for the
    ensemble to refuse when it is built. The one walk of an ensemble's config, for callers that
    fill in what their members need (a deployment's settings, endpoints, model paths)."""
    cfg = dict(config)
    members = cfg.get("members")
    if members is None:
        for name in ("tagger", "speakers"):
            if isinstance(cfg.get(name), Mapping):
                cfg[name] = fn(name, cfg[name])
    elif isinstance(members, list):
        cfg["members"] = [
            {**m, "config": fn(m["name"], m.get("config") or {})}
            if isinstance(m, Mapping) and isinstance(m.get("name"), str)
            else m
            for m in members
        ]
    return cfg


def combine_spans(
    member_spans: Sequence[Sequence[Span]],
    *,
    mode: str = "union",
    min_votes: int | None = None,
    resolution: str | None = None,
) -> list[Span]:
    """Combine the spans several members found in one message into non-overlapping spans.

    ``member_spans[i]`` holds member ``i``'s spans. ``min_votes`` (majority mode) defaults to
    more than half of the members; ``resolution`` to ``"hull"`` for union, ``"best"`` for
    majority.
    """
    if resolution is None:
        resolution = "hull" if mode == "union" else "best"
    if mode not in MODES:
        raise ConfigError(f"ensemble: unknown mode {mode!r}; known: {', '.join(MODES)}")
    n_members = len(member_spans)
    needed = n_members // 2 + 1 if min_votes is None else min_votes
    if mode == "union":
        needed = 1
    tagged = sorted(
        ((s, i) for i, spans in enumerate(member_spans) for s in spans),
        key=lambda t: (t[0].start, -t[0].end),
    )
    out: list[Span] = []
    group: list[tuple[Span, int]] = []
    group_end = -1
    for item in tagged:
        if group and item[0].start >= group_end:
            out.extend(_resolve(group, needed, resolution))
            group, group_end = [], -1
        group.append(item)
        group_end = max(group_end, item[0].end)
    if group:
        out.extend(_resolve(group, needed, resolution))
    return sorted(out)


def _resolve(group: list[tuple[Span, int]], needed: int, resolution: str) -> list[Span]:
    voters = {i for _, i in group}
    if len(voters) < needed:
        return []
    labels: Counter[str] = Counter()
    for span, _ in group:
        labels[span.label] += max(span.score, 1e-6)
    label = max(labels, key=lambda lab: (labels[lab], lab))
    score = max(s.score for s, _ in group)
    sources = "+".join(sorted({s.source or f"member{i}" for s, i in group}))
    if resolution == "hull":
        start = min(s.start for s, _ in group)
        end = max(s.end for s, _ in group)
        return [Span(start, end, label, score, f"ensemble:{len(voters)}:{sources}")]
    votes: dict[tuple[int, int], set[int]] = defaultdict(set)
    for span, i in group:
        votes[(span.start, span.end)].add(i)
    best = max(
        group,
        key=lambda t: (len(votes[(t[0].start, t[0].end)]), t[0].score, t[0].end - t[0].start),
    )[0]
    return [Span(best.start, best.end, label, score, f"ensemble:{len(voters)}:{sources}")]


class EnsembleDetector(BaseDetector):
    """Union (recall-first) or majority vote over member detectors."""

    name = "ensemble"
    version = "1.2.0"
    defaults: Mapping[str, Any] = {
        "members": None,  # None: default_members(tagger, presidio)
        "tagger": None,  # the default tagger member's config
        "presidio": False,  # true or a config: Presidio tuned joins the default members
        "speakers": None,  # the default speakers member's config ({"roles": [...]})
        "mode": "union",
        "min_votes": None,  # majority only; default more than half of the members
        "resolution": None,  # "hull" or "best"; default hull for union, best for majority
        "chunk_size": 64,  # dialogues handed to the members at a time
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        members = self.config["members"]
        if members is None:
            tagger, presidio, speakers = (self.config[k] for k in ("tagger", "presidio", "speakers"))
            for key, value in (("tagger", tagger), ("speakers", speakers)):
                if value is not None and not isinstance(value, Mapping):
                    raise ConfigError(f"ensemble: '{key}' must be the {key} member's config (an object)")
            if not isinstance(presidio, (bool, Mapping)):
                raise ConfigError("ensemble: 'presidio' must be true, false or a Presidio config")
            members = self.config["members"] = default_members(tagger, presidio, speakers)
        elif self.config["tagger"] is not None or self.config["presidio"] or self.config["speakers"] is not None:
            raise ConfigError(
                "ensemble: 'tagger', 'presidio' and 'speakers' shape the default members; "
                "with 'members' put their configs there"
            )
        if not isinstance(members, list) or not members:
            raise ConfigError("ensemble: 'members' must be a non-empty list of {name, config}")
        for k, member in enumerate(members):
            if not isinstance(member, Mapping) or not isinstance(member.get("name"), str):
                raise ConfigError(f"ensemble: member {k} needs a 'name'")
            if set(member) - {"name", "config"}:
                raise ConfigError(f"ensemble: member {k} has keys other than 'name' and 'config'")
            if member["name"] == "ensemble":
                raise ConfigError("ensemble: an ensemble cannot contain an ensemble")
        if self.config["mode"] not in MODES:
            raise ConfigError(
                f"ensemble: unknown mode {self.config['mode']!r}; known: {', '.join(MODES)}"
            )
        if self.config["resolution"] is None:
            self.config["resolution"] = "hull" if self.config["mode"] == "union" else "best"
        if self.config["resolution"] not in RESOLUTIONS:
            raise ConfigError(f"ensemble: 'resolution' must be one of {', '.join(RESOLUTIONS)}")
        votes = self.config["min_votes"]
        if votes is not None and (not isinstance(votes, int) or not 1 <= votes <= len(members)):
            raise ConfigError(f"ensemble: 'min_votes' must be between 1 and {len(members)}")
        # building a member is cheap (models load on first detect) and validates its config now
        self.members: list[Detector] = [build(m["name"], m.get("config") or {}) for m in members]

    @property
    def filters(self) -> tuple[str, ...]:
        """Every filter a member applies, once, in member order."""
        return tuple(dict.fromkeys(n for m in self.members for n in getattr(m, "filters", ())))

    @property
    def model_version(self) -> str:
        inner = ",".join(m.model_version for m in self.members)
        return f"{self.name}@{self.version}[{self.config['mode']}]({inner})"

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        return next(self.detect_many([dialogue]))

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        size = max(1, int(self.config["chunk_size"]))
        return self.batched(dialogues, self._run_chunk, max_dialogues=size)

    def _run_chunk(self, chunk: list[Dialogue]) -> Iterator[list[Detection]]:
        per_member = [list(m.detect_many(chunk)) for m in self.members]
        for k, dialogue in enumerate(chunk):
            yield self._combine(dialogue, [pm[k] for pm in per_member])

    def _combine(self, dialogue: Dialogue, member_dets: list[list[Detection]]) -> list[Detection]:
        out = []
        for j, message in enumerate(dialogue.messages):
            dets = [md[j] for md in member_dets]
            spans = combine_spans(
                [d.spans for d in dets],
                mode=self.config["mode"],
                min_votes=self.config["min_votes"],
                resolution=self.config["resolution"],
            )
            segment = next((d for d in dets if d.segment is not None), None)
            out.append(
                Detection(
                    dialogue.id,
                    message.index,
                    tuple(spans),
                    segment.segment if segment else None,
                    segment.segment_score if segment else None,
                )
            )
        return out


@register("ensemble", "Union or majority vote over other detectors' spans.")
def build_ensemble(config: Mapping[str, Any]) -> EnsembleDetector:
    return EnsembleDetector(config)
