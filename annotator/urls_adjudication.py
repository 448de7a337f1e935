"""URLs of this area, included under /p/<slug>/ by annotator.urls."""

urlpatterns: list = []
