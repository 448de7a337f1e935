"""URLs of the tagger, included under /p/<slug>/ by annotator.urls: the page, and one URL per action."""

from django.urls import path

from annotator.views import tagger

urlpatterns = [
    path("tagger/", tagger.tagger_page, name="tagger"),
    path("tagger/train/", tagger.tagger_train, name="tagger-train"),
    path("tagger/activate/", tagger.tagger_activate, name="tagger-activate"),
    path("tagger/distil/", tagger.tagger_distil, name="tagger-distil"),
    path("tagger/retrain/", tagger.tagger_retrain, name="tagger-retrain"),
    path("tagger/retrain/settings/", tagger.retrain_settings, name="tagger-retrain-settings"),
]
