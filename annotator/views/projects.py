from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator import access, storage
from annotator.forms.accounts import AccountActiveForm, InvitationForm
from annotator.forms.projects import (
    DialogueFilterForm,
    ImportForm,
    MemberForm,
    MemberRemoveForm,
    MemberRoleForm,
    ProjectForm,
    ReleaseFieldsForm,
    taxonomy_formset,
)
from annotator.models import BackgroundJob, DetectorRun, Dialogue, Role
from annotator.models.corpus import default_taxonomy
from annotator.selectors import projects as sel
from annotator.selectors.adjudication import merge_health
from annotator.selectors.invitations import invitations_open
from annotator.services import jobs
from annotator.services.accounts import AccountError, user_active_set
from annotator.services.audit import audit_record
from annotator.services.imports import corpus_import_start
from annotator.services.projects import (
    MembershipError,
    membership_remove,
    membership_role_set,
    membership_set,
    project_create,
)
from pipeline.surrogates.fields import FieldPolicy


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    projects = access.projects_for(request.user)
    rows = [(p, access.role_in(request.user, p)) for p in projects]
    return render(request, "projects/list.html", {"rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def project_new(request: HttpRequest) -> HttpResponse:
    if not (request.user.is_superuser or request.user.groups.filter(name="Admin").exists()):
        raise access.PermissionDenied("Only admins can create projects.")
    form = ProjectForm(request.POST or None)
    labels = taxonomy_formset(request.POST or None, taxonomy=default_taxonomy())
    fields = ReleaseFieldsForm(request.POST or None, policy=FieldPolicy())
    if request.method == "POST" and form.is_valid() & labels.is_valid() & fields.is_valid():  # & : all show errors
        data = dict(form.cleaned_data)
        project = project_create(name=data.pop("name"), slug=data.pop("slug"), user=request.user,
                                 taxonomy=labels.taxonomy(), release_fields=fields.config(), **data)
        messages.success(request, f"Project {project.name} created. Import a corpus to begin.")
        return redirect("project-dashboard", slug=project.slug)
    return render(request, "projects/form.html", {"form": form, "labels": labels, "fields": fields, "project": None})


@login_required
@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = ProjectForm(request.POST or None, instance=project)
    labels = taxonomy_formset(request.POST or None, taxonomy=project.taxonomy)
    fields = ReleaseFieldsForm(request.POST or None, policy=project.field_policy())
    if request.method == "POST" and form.is_valid() & labels.is_valid() & fields.is_valid():  # & : all show errors
        changed = (form.changed_data + (["taxonomy"] if labels.taxonomy() != project.taxonomy else [])
                   + (["release_fields"] if fields.config() != project.release_fields else []))
        with transaction.atomic():
            form.instance.taxonomy = labels.taxonomy()
            form.instance.release_fields = fields.config()
            form.save()
            audit_record(user=request.user, action="project.update", obj=project, project=project,
                         fields=sorted(changed))
        messages.success(request, "Settings saved.")
        return redirect("project-dashboard", slug=project.slug)
    return render(request, "projects/form.html", {"form": form, "labels": labels, "fields": fields,
                                                  "project": project})


@login_required
@require_GET
def project_dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ANNOTATOR)
    role = access.role_in(request.user, project)
    context = {
        "project": project,
        "role": role,
        "is_admin": role == Role.ADMIN,
        "is_adjudicator": role in (Role.ADMIN, Role.ADJUDICATOR),
        # project-wide figures (runs, gold, everyone's progress) are not for annotators: they
        # see their own queue only (the workspace panel)
        "counts": sel.project_counts(project, use_cache=True) if role != Role.ANNOTATOR else None,
        "jobs": sel.recent_jobs(project) if role == Role.ADMIN else [],
        "merge_health": merge_health(project, use_cache=True) if role == Role.ADMIN and not request.htmx else None,
    }
    if request.htmx:
        return render(request, "projects/_counts.html", context)
    return render(request, "projects/dashboard.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def project_members(request: HttpRequest, slug: str) -> HttpResponse:
    """The People page: members with role, last login and state; add, change, remove, invite."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = MemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user, role = form.cleaned_data["username"], form.cleaned_data["role"]
        try:
            membership_set(project=project, user=user, role=role, by=request.user)
        except MembershipError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{user.username} is now {Role(role).label} in {project.name}.")
            return redirect("project-members", slug=slug)
    context = {"project": project, "form": form, "members": sel.project_people(project),
               "roles": Role.choices, "is_staff": request.user.is_staff or request.user.is_superuser,
               "invite_form": InvitationForm(), "invitations": invitations_open(project)}
    return render(request, "projects/members.html", context)


def _member_write(request: HttpRequest, slug: str, user_id: int, form_class, write) -> HttpResponse:
    """One People-page action on one member: the form, the service, a message, back to the page."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    member = get_object_or_404(get_user_model(), pk=user_id, memberships__project=project)
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(request, "That change was incomplete; nothing was saved.")
    else:
        try:
            messages.success(request, write(project, member, form.cleaned_data))
        except (MembershipError, AccountError) as exc:
            messages.error(request, str(exc))
    return redirect("project-members", slug=slug)


@login_required
@require_POST
def member_role(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    def write(project, member, data):
        membership_role_set(project=project, user=member, role=data["role"], by=request.user,
                            expected=data["expected"])
        return f"{member.username} is now {Role(data['role']).label}."
    return _member_write(request, slug, user_id, MemberRoleForm, write)


@login_required
@require_POST
def member_remove(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    def write(project, member, data):
        membership_remove(project=project, user=member, by=request.user, expected=data["expected"])
        return f"{member.username} was removed from {project.name}; their past work keeps its pseudonym."
    return _member_write(request, slug, user_id, MemberRemoveForm, write)


@login_required
@require_POST
def member_account(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Staff only: switch a member's whole account off or on (site-wide, not just this project)."""
    if not (request.user.is_staff or request.user.is_superuser):
        access.project_for(request.user, slug, Role.ADMIN)  # outsiders still get 404
        raise access.PermissionDenied("Only staff can deactivate an account; remove the member from the project instead.")

    def write(project, member, data):
        active = data["active"]
        user_active_set(user=member, active=active, by=request.user)
        return f"{member.username}'s account is {'active' if active else 'deactivated'}."
    return _member_write(request, slug, user_id, AccountActiveForm, write)


@login_required
@require_http_methods(["GET", "POST"])
def corpus_upload(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        # stored where the import job can read it from any machine (annotator/storage.py)
        key = storage.upload_save(upload, Path(upload.name).suffix.lower()[:10])
        job = corpus_import_start(
            project=project, user=request.user,
            params={"upload": key, "name": upload.name, "spans_as": form.cleaned_data["spans_as"],
                    "skip_existing": form.cleaned_data["skip_existing"],
                    "format": form.cleaned_data["format"] or None},
        )
        return redirect("job-detail", slug=slug, job_id=job.pk)
    return render(request, "projects/upload.html", {"project": project, "form": form})


@login_required
@require_GET
def job_detail(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    job = get_object_or_404(BackgroundJob, pk=job_id, project=project)
    done, total = jobs.job_live_progress(job)
    context = {"project": project, "job": job, "done": done, "total": total}
    if request.htmx:
        return render(request, "projects/_job.html", context)
    return render(request, "projects/job.html", context)


@login_required
@require_GET
def dialogue_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    form = DialogueFilterForm(request.GET or None)
    q, page = "", 1
    if form.is_valid():
        q, page = form.cleaned_data["q"] or "", form.cleaned_data["page"] or 1
    rows, total = sel.dialogue_page(project, q=q, page=page)
    context = {"project": project, "rows": rows, "total": total, "q": q, "page": page,
               "has_next": page * 50 < total, "has_prev": page > 1}
    template = "projects/_dialogue_rows.html" if request.htmx else "projects/dialogues.html"
    return render(request, template, context)


@login_required
@require_GET
def dialogue_detail(request: HttpRequest, slug: str, dialogue_id: int) -> HttpResponse:
    """The transcript with its gold spans; admins may overlay a run's predictions and segments."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    dialogue = get_object_or_404(Dialogue, pk=dialogue_id, project=project)
    is_admin = access.has_role(request.user, project, Role.ADMIN)
    run = None
    if is_admin and request.GET.get("run", "").isdigit():
        run = DetectorRun.objects.filter(project=project, pk=int(request.GET["run"])).first()
    context = sel.dialogue_view(dialogue, run=run, with_segments=is_admin)
    context.update(project=project, dialogue=dialogue, run=run,
                   runs=DetectorRun.objects.filter(project=project, status="succeeded") if is_admin else [])
    return render(request, "projects/dialogue.html", context)
