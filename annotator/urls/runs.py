"""URLs of detector runs, included under /p/<slug>/ by annotator.urls."""

from django.urls import path

from annotator.views import runs

urlpatterns = [
    path("runs/", runs.run_list, name="run-list"),
    path("runs/<int:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<int:run_id>/cancel/", runs.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/resume/", runs.run_resume, name="run-resume"),
]
