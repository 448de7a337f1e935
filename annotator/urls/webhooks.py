"""URLs of this area, included under /p/<slug>/ by annotator.urls."""

from django.urls import path

from annotator.views import webhooks

urlpatterns = [
    path("webhooks/", webhooks.webhook_list, name="webhook-list"),
    path("webhooks/<int:hook_id>/", webhooks.webhook_detail, name="webhook-detail"),
    path("webhooks/<int:hook_id>/ping/", webhooks.webhook_ping_view, name="webhook-ping"),
    path("webhooks/<int:hook_id>/delete/", webhooks.webhook_delete_view, name="webhook-delete"),
    path("webhooks/<int:hook_id>/deliveries/<int:delivery_id>/again/", webhooks.webhook_redeliver_view,
         name="webhook-redeliver"),
]
