from django.apps import AppConfig


class WorkConfig(AppConfig):
    name = "work"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runs import notices
        from work import inbox

        # The emails a notice owes link to these pages.
        notices.links.notice = inbox.notice_link
        notices.links.inbox = inbox.inbox_link
