"""The root URLconf: project pages here; each area's pages come from urls/<area>.py under /p/<slug>/."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotator.api import api
from annotator.views import accounts, projects, styles

project_patterns = [
    path("", projects.project_dashboard, name="project-dashboard"),
    path("settings/", projects.project_settings, name="project-settings"),
    path("labels.css", styles.label_styles, name="project-label-styles"),
    path("members/", projects.project_members, name="project-members"),
    path("members/invite/", accounts.invitation_create, name="invitation-create"),
    path("members/invitations/<int:invitation_id>/revoke/", accounts.invitation_revoke, name="invitation-revoke"),
    path("members/<int:user_id>/role/", projects.member_role, name="member-role"),
    path("members/<int:user_id>/remove/", projects.member_remove, name="member-remove"),
    path("members/<int:user_id>/account/", projects.member_account, name="member-account"),
    path("import/", projects.corpus_upload, name="corpus-upload"),
    path("jobs/<int:job_id>/", projects.job_detail, name="job-detail"),
    path("dialogues/", projects.dialogue_list, name="dialogue-list"),
    path("dialogues/<int:dialogue_id>/", projects.dialogue_detail, name="dialogue-detail"),
    path("", include("annotator.urls.runs")),
    path("", include("annotator.urls.tagger")),
    path("", include("annotator.urls.workspace")),
    path("", include("annotator.urls.adjudication")),
    path("", include("annotator.urls.reports")),
    path("", include("annotator.urls.exports")),
    path("", include("annotator.urls.webhooks")),
]

urlpatterns = [
    path("", projects.project_list, name="project-list"),
    path("projects/new/", projects.project_new, name="project-new"),
    path("p/<slug:slug>/", include(project_patterns)),
    path("accounts/login/", accounts.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/tokens/", accounts.api_tokens, name="api-tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", accounts.api_token_revoke, name="api-token-revoke"),
    path("invitations/<str:token>/", accounts.invitation_accept_page, name="invitation-accept"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
if settings.BLINDSPOT_OIDC:  # optional OpenID Connect login (docs/deploy.md)
    urlpatterns.append(path("oidc/", include("mozilla_django_oidc.urls")))
