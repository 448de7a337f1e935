"""URLs of this area, included under /p/<slug>/ by annotator.urls."""

from django.urls import path

from annotator.views import reports

urlpatterns = [
    path("reports/agreement/", reports.agreement, name="reports-agreement"),
    path("reports/agreement.<str:fmt>", reports.agreement_download, name="reports-agreement-download"),
    path("reports/detectors/", reports.detectors, name="reports-detectors"),
    path("reports/detectors.<str:fmt>", reports.detectors_download, name="reports-detectors-download"),
    path("reports/circularity/", reports.circularity, name="reports-circularity"),
    path("reports/circularity/<int:job_id>.<str:fmt>", reports.circularity_download,
         name="reports-circularity-download"),
]
