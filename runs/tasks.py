from celery import shared_task

from . import timers


@shared_task(name="runs.tasks.sweep", ignore_result=True)
def sweep() -> int:
    """Catch up every run whose next wake-up has passed."""
    return timers.sweep()
