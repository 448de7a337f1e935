"""URLs of this area, included under /p/<slug>/ by annotator.urls."""

from django.urls import path

from annotator.views import workspace as v

item = "item/<uuid:public_id>/"

urlpatterns = [
    path("queue/", v.queue, name="workspace-queue"),
    path("queue/items/", v.queue_list, name="workspace-list"),
    path("guidelines/", v.guidelines, name="workspace-guidelines"),
    path(item, v.item, name="workspace-item"),
    path(item + "spans/add/", v.span_add, name="workspace-span-add"),
    path(item + "spans/delete/", v.span_delete, name="workspace-span-delete"),
    path(item + "spans/relabel/", v.span_relabel, name="workspace-span-relabel"),
    path(item + "suggestions/accept/", v.suggestion_accept, name="workspace-suggestion-accept"),
    path(item + "suggestions/reject/", v.suggestion_reject, name="workspace-suggestion-reject"),
    path(item + "suggestions/relabel/", v.suggestion_relabel, name="workspace-suggestion-relabel"),
    path(item + "no-pii/", v.no_pii, name="workspace-no-pii"),
    path(item + "no-pii/next/", v.no_pii_next, name="workspace-no-pii-next"),
    path(item + "flag/", v.flag, name="workspace-flag"),
    path(item + "undo/", v.undo, name="workspace-undo"),
    path(item + "submit/", v.submit, name="workspace-submit"),
    path(item + "skip/", v.skip, name="workspace-skip"),
    path(item + "reopen/", v.reopen, name="workspace-reopen"),
    path(item + "time/", v.time_report, name="workspace-time"),
    path("assignments/", v.assignments_admin, name="workspace-admin"),
    path("assignments/plans/<int:plan_id>/", v.plan_detail, name="workspace-plan"),
    path("assignments/reassign/", v.reassign, name="workspace-reassign"),
]
