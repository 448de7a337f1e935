"""URLs of this area, included under /p/<slug>/ by annotator.urls."""

from django.urls import path

from annotator.views import adjudication as adj

urlpatterns = [
    path("adjudication/", adj.queue, name="adjudication-queue"),
    path("adjudication/merge/", adj.merge, name="adjudication-merge"),
    path("adjudication/next/", adj.next_item, name="adjudication-next"),
    path("adjudication/<int:item_id>/", adj.item, name="adjudication-item"),
    path("adjudication/<int:item_id>/decide/", adj.decide, name="adjudication-decide"),
]
