"""What the database says now, read at each scrape of /metrics: steps by state, overdue steps, sweep lag.

Each is one aggregate query: the step counts read the partial index of active steps (step_active_now), the
overdue count its own partial index (step_overdue_now), the lag the index of runs waiting for a time
(run_wake).
"""

from __future__ import annotations

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from base.metrics import PREFIX

from .models import ACTIVE_NOW, OVERDUE_NOW, Run, RunStep


class RunGauges(Collector):
    def collect(self):
        steps = GaugeMetricFamily(f"{PREFIX}_steps", "Steps now ready for an agent, claimed, or waiting "
                                  "(on a person, a time or an event), by state and kind.", labels=["state", "kind"])
        counted = (RunStep.objects.filter(ACTIVE_NOW).values_list("state", "kind")
                   .annotate(n=Count("pk")).order_by())
        for state, kind, n in counted:
            steps.add_metric([state, kind], n)
        yield steps
        overdue = RunStep.objects.filter(OVERDUE_NOW).count()
        yield GaugeMetricFamily(f"{PREFIX}_steps_overdue", "Steps past their due moment and not finished.",
                                value=overdue)
        now = timezone.now()
        oldest = Run.objects.filter(wake_at__lte=now).aggregate(oldest=Min("wake_at"))["oldest"]
        lag = (now - oldest).total_seconds() if oldest else 0.0
        yield GaugeMetricFamily(f"{PREFIX}_sweep_lag_seconds", "How long the oldest due wake-up (a wait, a "
                                "deadline, a lease's end) has waited for the sweep to apply it.", value=lag)
