from django.urls import path

from . import catalogue, conversation, live_page, operations, views

urlpatterns = [
    path("", views.home, name="home"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("inbox/notifications/read/", views.mark_notices_read, name="notices-read"),
    path("inbox/<str:item_id>/", views.item_page, name="item"),
    path("inbox/<str:item_id>/take/", views.take_item, name="item-take"),
    path("inbox/<str:item_id>/release/", views.release_item, name="item-release"),
    path("inbox/<str:item_id>/comment/", views.person_page(conversation.comment_on_item), name="item-comment"),
    path("inbox/<str:item_id>/assign/", views.person_page(conversation.assign_item), name="item-assign"),
    path("runs/", views.runs_page, name="runs"),
    path("search/", views.search_page, name="search"),
    path("runs/<str:run_id>/", views.run_page, name="run"),
    path("runs/<str:run_id>/cancel/", views.cancel_run, name="run-cancel"),
    path("runs/<str:run_id>/comment/", views.person_page(conversation.comment_on_run), name="run-comment"),
    path("live/", live_page.poll, name="live"),
    path("operations/", operations.overview, name="operations"),
    path("operations/<str:name>/", operations.live_map, name="live-map"),
    path("processes/", catalogue.catalogue, name="processes"),
    path("processes/<str:name>/", catalogue.start, name="process-start"),
    path("people/suggest/", views.people_suggest, name="people-suggest"),
]
