from __future__ import annotations

from datetime import UTC, datetime

import markdown as md
import nh3
from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.dateparse import parse_datetime
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

register = template.Library()


# What user Markdown may become: formatting, tables and links, nothing that runs or styles.
MARKDOWN_TAGS = {
    "a", "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "del",
}
MARKDOWN_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"colspan"}, "td": {"colspan"}}
# Relative links pass too (nh3 keeps them by default); javascript:, data:, vbscript: and the rest go.
MARKDOWN_URL_SCHEMES = {"http", "https", "mailto"}


def sanitize_html(html: str) -> str:
    """An allow-list pass over HTML that users wrote (through Markdown): the one place it is cleaned."""
    return nh3.clean(html, tags=MARKDOWN_TAGS, attributes=MARKDOWN_ATTRIBUTES,
                     url_schemes=MARKDOWN_URL_SCHEMES, link_rel="noopener noreferrer nofollow")


@register.filter
def render_markdown(text: str) -> str:
    """User Markdown (guidelines) as safe HTML: raw HTML is escaped, then an allow-list keeps only
    formatting and http(s)/mailto/relative links, so a ``javascript:`` link never reaches a reader."""
    converter = md.Markdown(extensions=["sane_lists", "tables"], output_format="html")
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return mark_safe(sanitize_html(converter.convert(text or "")))


@register.simple_tag
def label_styles_url(project) -> str:
    """Where the project's label colours are (``<link rel="stylesheet">`` in base.html)."""
    from annotator.views.styles import label_styles_url as url

    return url(project)


@register.filter
def percent(part, whole) -> int:
    try:
        return int(round(100 * float(part) / float(whole))) if float(whole) else 0
    except (TypeError, ValueError):
        return 0


# URL names grouped under the project navigation entry they belong to (for aria-current).
_NAV_SECTIONS = {
    "overview": {"project-dashboard"},
    "annotate": {"workspace-queue", "workspace-list", "workspace-item", "workspace-guidelines"},
    "dialogues": {"dialogue-list", "dialogue-detail"},
    "adjudication": {"adjudication-queue", "adjudication-item"},
    "reports": {"reports-agreement", "reports-circularity", "reports-detectors"},
    "runs": {"run-list", "run-detail"},
    "tagger": {"tagger"},
    "assignments": {"workspace-admin", "workspace-plan"},
    "import": {"corpus-upload", "job-detail"},
    "exports": {"export-list", "export-detail"},
    "members": {"project-members", "invitation-create"},
    "settings": {"project-settings"},
    "webhooks": {"webhook-list", "webhook-detail"},
}


@register.inclusion_tag("projects/_nav.html", takes_context=True)
def project_nav(context, project):
    """The same project navigation on every project page, with the links the user's role may open."""
    from annotator.access import has_role
    from annotator.models import Role

    request = context.get("request")
    user = getattr(request, "user", None)
    match = getattr(request, "resolver_match", None)
    name = match.url_name if match else ""
    current = next((k for k, names in _NAV_SECTIONS.items() if name in names), "")
    ok = user is not None and user.is_authenticated
    return {
        "project": project, "current": current,
        "is_adjudicator": ok and has_role(user, project, Role.ADJUDICATOR),
        "is_admin": ok and has_role(user, project, Role.ADMIN),
    }


@register.inclusion_tag("projects/_pseudonym_key.html", takes_context=True)
def pseudonym_key(context, project):
    """Who is behind each pseudonym (A03 → a username), for the project's admins only: an
    adjudicator decides without knowing who annotated, and annotators never see each other."""
    from annotator.access import has_role
    from annotator.models import Role
    from annotator.selectors.projects import pseudonym_key as key

    user = getattr(context.get("request"), "user", None)
    allowed = user is not None and has_role(user, project, Role.ADMIN)
    return {"key": key(project) if allowed else []}


@register.filter
def as_json(value) -> str:
    """A dict or list as compact JSON (what a user would type), not Python's repr."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


_METRIC_NAMES = {
    "cohen_kappa": "Cohen's κ", "fleiss_kappa": "Fleiss' κ", "krippendorff_alpha": "Krippendorff's α",
    "span_f1": "Span F1",
}


@register.filter
def metric_name(key: str) -> str:
    """A readable name for a metric key of the agreement report (unknown keys are shown as they are)."""
    return _METRIC_NAMES.get(key, str(key).replace("_", " "))


@register.filter
def pair_name(pair: str) -> str:
    """'*' in the agreement report means every annotator together."""
    return "all annotators" if pair == "*" else pair


_METRIC_UNITS = {"cohen_kappa": "tokens", "fleiss_kappa": "tokens", "krippendorff_alpha": "values",
                 "span_f1": "spans"}


@register.filter
def n_unit(key: str) -> str:
    """What the n of an agreement figure counts (see pipeline.metrics.agreement.Figure.n)."""
    return _METRIC_UNITS.get(key, "")


# ---- values for people: records keep dicts and ISO 8601 strings, pages show words -------------

def _words(key) -> str:
    return str(key).replace("_", " ")


def _readable(value) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{_words(k)} {_readable(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_readable(v) for v in value)
    return str(value)


@register.filter
def key_values(value) -> list[tuple[str, str]]:
    """A recorded dict (a job's parameters, a version's data counts) as (key, value) pairs for a
    ``key: value`` list: keys in words, values as a person writes them (yes/no, nested dicts as
    ``key value, …``), never Python's repr. Anything but a dict gives no pairs."""
    if not isinstance(value, dict):
        return []
    return [(_words(k), _readable(v)) for k, v in value.items()]


@register.filter
def when(value) -> str:
    """A moment (a datetime, or the ISO 8601 string a JSON record keeps) for people, in the site's
    time zone and with how long ago: "3 Dec 2026, 16:31 UTC (2 hours ago)". A value that is not a
    moment is shown as it is; none as a dash."""
    if not value:
        return "—"
    moment = value if isinstance(value, datetime) else parse_datetime(str(value))
    if moment is None:
        return str(value)
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    ago = "just now" if (timezone.now() - moment).total_seconds() < 60 else f"{timesince(moment)} ago"
    return f"{date_format(timezone.localtime(moment), 'j M Y, H:i T')} ({ago})"


@register.inclusion_tag("_job_wait.html")
def job_wait(job):
    """Why a queued job waits, under its status on every job page ("Queued since 3 minutes"
    said nothing of the training it waited behind)."""
    from annotator.dispatch import wait_reason

    return {"reason": wait_reason() if getattr(job, "status", "") == "queued" else ""}
