"""Faults planted in a proxy in front of a good server, one per rule the runner claims to check.

Each fault breaks one rule the way a faulty server would, seen only through the protocol (it knows
nothing of how this server is built), names the runner sections that must notice it, and the checks
expected to fail. tests/conformance/test_mutations.py runs the runner once per fault and asserts that
at least one expected check fails, with the HTTP exchanges that led to it in the report.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass

from .broken_proxy import Faults


def view_of(envelope: dict) -> dict | None:
    """The run view in an ok envelope, if it holds one."""
    data = envelope.get("data") if envelope.get("ok") else None
    if isinstance(data, dict) and isinstance(data.get("run"), dict) and isinstance(data.get("steps"), list):
        return data
    return None


class Fault:
    """No change at all; each fault overrides the hooks it needs (see broken_proxy's docstring)."""

    def __init__(self):
        self.lock = threading.Lock()

    def rewrite(self, tool: str, arguments: dict, envelope: dict) -> dict:
        return envelope


class NoResourceMetadata(Fault):
    """The 401 challenge names no resource metadata (MCP authorization; RFC 9728 §5.1)."""

    def headers(self, path, status, headers):
        if status != 401:
            return headers
        return [(key, 'Bearer realm="mcp"' if key.lower() == "www-authenticate" else value) for key, value in headers]


class ToolMissing(Fault):
    """tools/list leaves out cancel, a required tool (spec §4.1)."""

    def mcp(self, method, params, result):
        if method == "tools/list":
            result["tools"] = [tool for tool in result.get("tools") or [] if tool.get("name") != "cancel"]
        return result


class OldVersion(Fault):
    """describe says core-1 (spec §4.1)."""

    def rewrite(self, tool, arguments, envelope):
        if tool == "describe" and envelope.get("ok"):
            envelope["data"]["version"] = "core-1"
        return envelope


class DescriptionDrift(Fault):
    """list_processes shows a description other than the published one (spec §4.1, §6 rule 5)."""

    def rewrite(self, tool, arguments, envelope):
        if tool == "list_processes" and envelope.get("ok"):
            for item in envelope["data"]["items"]:
                if item.get("name") == "support-escalation":
                    item["description"] += " (edited)"
        return envelope


class RenewKeepsExpiry(Fault):
    """renew answers the old expiry instead of now plus the lease (spec §3.3)."""

    def __init__(self):
        super().__init__()
        self.expiry: dict[str, str] = {}

    def rewrite(self, tool, arguments, envelope):
        if tool in ("claim", "renew") and envelope.get("ok"):
            data = envelope["data"]
            with self.lock:
                if tool == "renew" and arguments.get("token") in self.expiry:
                    data["expiresAt"] = self.expiry[arguments["token"]]
                self.expiry[data["token"]] = data["expiresAt"]
        return envelope


class ClaimedListed(Fault):
    """get_work goes on listing a step after it was claimed (spec §6 rule 2; tools.md get_work)."""

    def __init__(self):
        super().__init__()
        self.items: dict[tuple, dict] = {}
        self.claimed: set[tuple] = set()

    def rewrite(self, tool, arguments, envelope):
        if not envelope.get("ok"):
            return envelope
        with self.lock:
            if tool == "claim":
                self.claimed.add((arguments.get("runId"), arguments.get("stepId")))
            elif tool in ("submit", "escalate"):
                self.claimed.clear()
            elif tool == "get_work":
                items = envelope["data"]["items"]
                for item in items:
                    if "stepId" in item:
                        self.items[(item["runId"], item["stepId"])] = copy.deepcopy(item)
                shown = {(item.get("runId"), item.get("stepId")) for item in items}
                if items and "stepId" in items[0]:
                    items += [copy.deepcopy(self.items[key]) for key in self.claimed
                              if key in self.items and key not in shown]
        return envelope


class ProgressLost(Fault):
    """The handoff of a step whose lease ended loses the progress note (spec §3.3)."""

    def rewrite(self, tool, arguments, envelope):
        data = envelope.get("data") if envelope.get("ok") else None
        if tool == "claim" and isinstance(data, dict) and isinstance(data.get("handoff"), dict):
            data["handoff"].pop("progress", None)
        if tool == "get_work" and isinstance(data, dict):
            for item in data["items"]:
                if isinstance(item.get("handoff"), dict):
                    item["handoff"].pop("progress", None)
        return envelope


class CancelKeepsReady(Fault):
    """cancel leaves a ready step ready (spec §3.5: every unfinished step becomes cancelled)."""

    def __init__(self):
        super().__init__()
        self.ready: dict[str, set[str]] = defaultdict(set)
        self.cancelled: set[str] = set()

    def rewrite(self, tool, arguments, envelope):
        view = view_of(envelope)
        if view is None:
            return envelope
        run_id = view["run"]["id"]
        with self.lock:
            if tool == "cancel":
                self.cancelled.add(run_id)
            if run_id in self.cancelled:
                for step in view["steps"]:
                    if step["id"] in self.ready[run_id] and step["state"] == "cancelled":
                        step["state"] = "ready"
            else:
                self.ready[run_id] = {step["id"] for step in view["steps"] if step["state"] == "ready"}
        return envelope


class WorkAfterCancel(Fault):
    """get_work goes on listing the ready agent steps of a cancelled run (spec §3.5; tools.md get_work)."""

    def __init__(self):
        super().__init__()
        self.items: dict[str, list[dict]] = {}
        self.cancelled: set[str] = set()

    def rewrite(self, tool, arguments, envelope):
        view = view_of(envelope)
        with self.lock:
            if view is not None and tool == "cancel":
                self.cancelled.add(view["run"]["id"])
            elif view is not None and view["run"]["id"] not in self.cancelled:
                self.items[view["run"]["id"]] = [work_item(view, step) for step in view["steps"]
                                                  if step["state"] == "ready" and step["kind"] == "agent"]
            elif tool == "get_work" and envelope.get("ok"):
                items = envelope["data"]["items"]
                shown = {item["runId"] for item in items}
                for run_id in self.cancelled - shown:
                    items += copy.deepcopy(self.items.get(run_id, []))
        return envelope


def work_item(view: dict, step: dict) -> dict:
    """The get_work item of a ready agent step, as tools.md shapes it."""
    run = view["run"]
    return {"runId": run["id"], "stepId": step["id"], "process": run["process"], "version": run["version"],
            "mode": run["mode"], "readySince": run["updatedAt"], "due": None, "overdue": False, "handoff": None,
            "claim": {"tool": "claim", "arguments": {"runId": run["id"], "stepId": step["id"],
                                                      "requestId": "<new UUID>"}}}


class AlreadyDecidedAsStale(Faults):
    """A decision on a decided item is stale, not conflict already_decided (spec §3.4)."""

    def __init__(self):
        super().__init__(("already_decided",))


class NewestFirst(Faults):
    """Held events are consumed newest first (spec §3.6)."""

    def __init__(self):
        super().__init__(("newest_first",))


class ReplayForgotten(Fault):
    """start_run does not remember its requestId: a replay starts another run (spec §4)."""

    def request(self, tool, arguments):
        if tool == "start_run" and isinstance(arguments, dict):
            arguments["requestId"] = str(uuid.uuid4())
        return arguments


class ExistenceLeak(Fault):
    """not_found is answered as forbidden, telling another organization that the run exists (spec §4.3)."""

    def rewrite(self, tool, arguments, envelope):
        if (envelope.get("error") or {}).get("code") == "not_found":
            envelope["error"]["code"] = "forbidden"
        return envelope


class LiveInTest(Fault):
    """get_work items of a test run say mode live (spec §3.3)."""

    def rewrite(self, tool, arguments, envelope):
        if tool == "get_work" and envelope.get("ok"):
            for item in envelope["data"]["items"]:
                item["mode"] = "live"
        return envelope


class BranchMissing(Fault):
    """A fork makes one branch entry without its work item (profiles/parallel.md §3)."""

    def rewrite(self, tool, arguments, envelope):
        view = view_of(envelope)
        if view is not None and view["run"].get("process") == "major-incident":
            view["workItems"] = [item for item in view["workItems"] if item.get("stepId") != "communications"]
        return envelope


class RestDrift(Fault):
    """describe over REST differs from describe over MCP (spec §4)."""

    def rest(self, tool, arguments, envelope):
        if tool == "describe" and envelope.get("ok"):
            envelope["data"]["leaseSeconds"] += 1
        return envelope


class EnvelopeExtra(Fault):
    """An envelope carries a member beside ok and data (tools.md)."""

    def rewrite(self, tool, arguments, envelope):
        if tool == "list_processes":
            envelope["debug"] = True
        return envelope


@dataclass(frozen=True)
class Planted:
    """One fault: what it breaks, the sections that must notice, and the checks expected to fail."""

    name: str
    fault: type
    sections: tuple[str, ...]
    expected: frozenset[str]


PLANTED = (
    Planted("no_resource_metadata", NoResourceMetadata, ("mcp",), frozenset({"mcp.unauthenticated"})),
    Planted("tool_missing", ToolMissing, ("mcp",), frozenset({"mcp.tools_list", "mcp.stateless_tools"})),
    Planted("old_version", OldVersion, ("describe",), frozenset({"describe.shape"})),
    Planted("description_drift", DescriptionDrift, ("publication",), frozenset({"publish.listed"})),
    Planted("renew_keeps_expiry", RenewKeepsExpiry, ("agents",), frozenset({"agent.renew"})),
    Planted("claimed_listed", ClaimedListed, ("agents",), frozenset({"agent.claimed_unlisted"})),
    Planted("progress_lost", ProgressLost, ("leases",), frozenset({"lease.expiry"})),
    Planted("already_decided_as_stale", AlreadyDecidedAsStale, ("people",), frozenset({"people.already_decided"})),
    Planted("cancel_keeps_ready", CancelKeepsReady, ("ending",), frozenset({"end.cancel_ready"})),
    Planted("work_after_cancel", WorkAfterCancel, ("ending",), frozenset({"end.get_work"})),
    Planted("newest_first", NewestFirst, ("waits",), frozenset({"wait.oldest_first"})),
    Planted("replay_forgotten", ReplayForgotten, ("idempotency",), frozenset({"idem.start_run", "idem.conflict"})),
    Planted("existence_leak", ExistenceLeak, ("isolation",), frozenset({"iso.reads", "iso.writes"})),
    Planted("live_in_test", LiveInTest, ("modes",), frozenset({"mode.get_work"})),
    Planted("branch_missing", BranchMissing, ("parallel",), frozenset({"par.fork"})),
    Planted("rest_drift", RestDrift, ("rest",), frozenset({"rest.describe"})),
    Planted("envelope_extra", EnvelopeExtra, ("describe",), frozenset({"answers.envelope"})),
)
