"""URLs of this area, included under /p/<slug>/ by annotator.urls."""

from django.urls import path

from annotator.views import exports

urlpatterns = [
    path("exports/", exports.export_list, name="export-list"),
    path("exports/<int:export_id>/", exports.export_detail, name="export-detail"),
    path("exports/<int:export_id>/files.zip", exports.export_zip_download, name="export-zip"),
    path("exports/<int:export_id>/files/<path:name>", exports.export_download, name="export-download"),
    path("exports/<int:export_id>/mapping/", exports.release_mapping_download, name="release-mapping"),
    path("exports/<int:export_id>/publish/", exports.release_publish, name="release-publish"),
    path("exports/<int:export_id>/review/", exports.release_review, name="release-review"),
    path("exports/<int:export_id>/review/<int:candidate_id>/", exports.release_review, name="release-review-item"),
    path("exports/<int:export_id>/review/<int:candidate_id>/decide/", exports.release_review_decide,
         name="release-review-decide"),
    path("exports/<int:export_id>/review/<int:candidate_id>/skip/", exports.release_review_skip,
         name="release-review-skip"),
    path("exports/<int:export_id>/review/undo/", exports.release_review_undo, name="release-review-undo"),
]
