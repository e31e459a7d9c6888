"""A thousand two-writer races, each on a fresh run, on PostgreSQL: every guarantee holds after every race,
with writes applied past their guard and (a fifth as many) with every write locking its run.

Two persistent threads, each with its own connection, meet at a barrier every round and send one write
each to the same run; the first thread sets the round up before the barrier and checks it after. The
pairs are taken in turn:

- claim vs claim by two agents: one actor at a time (spec §6 rule 2, tools.md claim);
- one submit sent twice with one requestId: idempotent replay (spec §4, §3.3);
- submit vs renew on one lease: a replaced claim is stale, an ended run takes no writes (§3.3, §3.5, §6 rule 2);
- submit by the holder vs the same token from another agent: the claim belongs to its holder (§6 rule 2).

Which write of a pair goes first is up to the scheduler; the test asserts what must hold either way and
counts the orders it saw, without asserting on any of them.
"""

import json
import threading
from collections import Counter

import pytest
from django.db import connection

from runs.models import IdempotencyRecord, Lease, Passage, RunStep
from tests.runs.conftest import ToolCaller, rid
from tests.runs.test_agent_loop import ONE_STEP
from tests.runs.test_concurrency import in_threads

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]

ROUNDS = 1000
PAIRS = ("claim_vs_claim", "submit_replay", "submit_vs_renew", "stolen_token")
# Not a pacing clock: a round that takes this long is a deadlock, and the barrier breaks rather than hang.
DEADLOCK_SECONDS = 60


@pytest.fixture(autouse=True)
def needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL row locks (SQLite ignores select_for_update); set DATABASE_URL")


class Round:
    """One race: the two calls by role, which thread makes which, and what the checker needs."""

    def __init__(self, number: int, pair: str, run_id: str, calls: dict, **facts):
        self.number = number
        self.pair = pair
        self.run_id = run_id
        self.calls = calls
        # Swap sides every other round of a pair, so neither role always runs on the thread that
        # leaves the barrier first.
        roles = list(calls)
        self.roles = roles if (number // len(PAIRS)) % 2 == 0 else roles[::-1]
        self.facts = facts
        self.answers: dict = {}


def _refused(answer, status: int, code: str, issues=None) -> bool:
    got_status, body = answer
    if body["ok"] or got_status != status or body["error"]["code"] != code:
        return False
    return issues is None or body["error"].get("issues") == issues


# With OPTIMISTIC_WRITES off every write locks its run in a transaction, as every write does after its
# optimistic attempts lose: what it reads beside the lock must be what the lock's last holder committed.
@pytest.mark.parametrize("optimistic", [True, False], ids=["optimistic", "locked"])
def test_a_thousand_two_writer_races_keep_every_guarantee(publish, make_agent, settings, optimistic):
    settings.OPTIMISTIC_WRITES = optimistic
    rounds = ROUNDS if optimistic else ROUNDS // 5
    publish(ONE_STEP)
    identities = {"a": make_agent("agent-a"), "b": make_agent("agent-b")}
    # Each thread calls through its own clients; both threads act as the same two agents.
    callers = [{name: ToolCaller(identity) for name, identity in identities.items()} for _ in range(2)]
    ref_a, ref_b = identities["a"].ref, identities["b"].ref
    barrier = threading.Barrier(2, timeout=DEADLOCK_SECONDS)
    shared: dict = {}
    seen: dict[str, Counter] = {pair: Counter() for pair in PAIRS}

    def start(caller) -> str:
        return caller.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]

    def submit(caller, token, request_id, summary="Did the work."):
        return caller.raw("submit", token=token, output={"result": "r"}, summary=summary, requestId=request_id)

    def prepare(number: int) -> Round:
        """Thread 0, before the barrier: a fresh run, and the two calls to race on it."""
        a = callers[0]["a"]
        pair = PAIRS[number % len(PAIRS)]
        run_id = start(a)
        if pair == "claim_vs_claim":
            calls = {
                "a": lambda c: c["a"].raw("claim", runId=run_id, stepId="work", requestId=rid()),
                "b": lambda c: c["b"].raw("claim", runId=run_id, stepId="work", requestId=rid()),
            }
            return Round(number, pair, run_id, calls)
        token = a.write("claim", runId=run_id, stepId="work")["token"]
        if pair == "submit_replay":
            request_id = rid()
            calls = {side: lambda c: submit(c["a"], token, request_id) for side in ("first", "second")}
            return Round(number, pair, run_id, calls, token=token, request_ids=[request_id])
        if pair == "submit_vs_renew":
            submit_id, renew_id = rid(), rid()
            calls = {
                "submit": lambda c: submit(c["a"], token, submit_id),
                "renew": lambda c: c["a"].raw("renew", token=token, progress="Halfway.", requestId=renew_id),
            }
            return Round(number, pair, run_id, calls, token=token, request_ids=[submit_id, renew_id])
        holder_id, thief_id = rid(), rid()
        calls = {
            "holder": lambda c: submit(c["a"], token, holder_id, "Holder's work."),
            "thief": lambda c: submit(c["b"], token, thief_id, "Thief's work."),
        }
        return Round(number, pair, run_id, calls, token=token, request_ids=[holder_id, thief_id])

    def check(race: Round) -> None:
        """Thread 0, after both answers are in: the guarantees for the pair, then the run view."""
        a = callers[0]["a"]
        answers = race.answers
        for status, body in answers.values():
            assert status < 500, (race.pair, race.number, status, body)
        tokens = [body["data"]["token"] for _, body in answers.values() if body["ok"] and "token" in body["data"]]
        step = RunStep.objects.get(run_id=int(race.run_id[2:]), step_id="work")
        leases = list(Lease.objects.filter(step=step))
        completes = True

        if race.pair == "claim_vs_claim":
            # spec §6 rule 2 (one actor at a time), tools.md claim: one token; the other is claimed_by_other.
            winners = [side for side, (_, body) in answers.items() if body["ok"]]
            assert len(winners) == 1, answers
            [winner] = winners
            [loser] = [side for side in answers if side != winner]
            assert _refused(answers[loser], 409, "conflict", ["claimed_by_other"]), answers[loser]
            assert len(leases) == 1 and leases[0].holder == identities[winner].ref
            assert step.state == "claimed" and step.claimed_by == identities[winner].ref
            seen[race.pair][f"{winner} claimed"] += 1
            completes = False

        elif race.pair == "submit_replay":
            # spec §4: a repeated requestId with the same arguments returns the original result and
            # changes nothing; the server, not the client, resolves concurrent writes (§6).
            first, second = answers["first"], answers["second"]
            assert first[1]["ok"] and second[1]["ok"], answers
            assert first == second, "a replay must return the original result"
            assert IdempotencyRecord.objects.filter(request_id=race.facts["request_ids"][0]).count() == 1
            assert len(leases) == 1
            seen[race.pair]["both ok, identical"] += 1

        elif race.pair == "submit_vs_renew":
            submitted, renewed = answers["submit"], answers["renew"]
            assert submitted[1]["ok"] != renewed[1]["ok"], f"exactly one may succeed: {answers}"
            if submitted[1]["ok"]:
                # spec §3.5: the submit ended the run; a write to an ended run is conflict run_ended,
                # checked before anything else (so not renew's `stale`).
                assert _refused(renewed, 409, "conflict", ["run_ended"]), renewed
                assert len(leases) == 1
                seen[race.pair]["submit first; renew run_ended"] += 1
            else:
                # spec §3.3: renew returns a new token and the old one stops working at once;
                # §6 rule 2: a token from a claim that was replaced is refused as stale.
                assert _refused(submitted, 409, "stale"), submitted
                new_token = renewed[1]["data"]["token"]
                assert new_token != race.facts["token"]
                assert len(leases) == 2 and step.state == "claimed" and step.progress == "Halfway."
                view = a("get_run", runId=race.run_id)
                assert view["run"]["state"] == "active" and "work" not in view["data"]["steps"]
                assert new_token not in json.dumps(view)  # §6 rule 2: never in get_run
                # The renewed lease holds: the same agent completes the step with the new token.
                assert a.write("submit", token=new_token, output={"result": "r"}, summary="Did the work.")
                seen[race.pair]["renew first; submit stale"] += 1

        else:  # stolen_token
            holder, thief = answers["holder"], answers["thief"]
            # spec §6 rule 2: the claim belongs to the agent it was issued to; the thief's failed call
            # changes nothing (§4), so the holder's submit succeeds whichever goes first.
            assert holder[1]["ok"], holder
            assert not thief[1]["ok"], f"a token presented by another agent was accepted: {thief}"
            if _refused(thief, 409, "conflict", ["run_ended"]):
                seen[race.pair]["holder first; thief run_ended"] += 1  # spec §3.5
            else:
                assert _refused(thief, 403, "forbidden"), thief  # spec §4.3: not allowed for this identity
                seen[race.pair]["thief first; thief forbidden"] += 1
            assert len(leases) == 1

        # spec §4: a call that failed is not recorded, so a retry can succeed; one that succeeded is.
        if race.pair in ("submit_vs_renew", "stolen_token"):
            for role, request_id in zip(race.calls, race.facts["request_ids"], strict=True):
                recorded = IdempotencyRecord.objects.filter(request_id=request_id).count()
                assert recorded == (1 if answers[role][1]["ok"] else 0), (race.pair, role, recorded)

        view = a("get_run", runId=race.run_id)
        serialised = json.dumps(view)
        for token in [*tokens, race.facts.get("token")]:
            assert token is None or token not in serialised  # spec §6 rule 2: tokens never in get_run
        passages = Passage.objects.filter(run_id=int(race.run_id[2:]), step_id="work", how="passed").count()
        states = {s["id"]: s["state"] for s in view["steps"]}
        if not completes:
            assert view["run"]["state"] == "active" and view["run"]["outcome"] is None
            assert states["work"] == "claimed" and "work" not in view["data"]["steps"] and passages == 0
            return
        # spec §3.1/§3.2/§3.5: exactly one completion of `work`, by the holder; the finish ended the run.
        assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "completed", view["run"]
        assert view["run"]["ended"]["by"] == "server" and view["run"]["ended"]["note"] is None
        assert states["work"] == "done" and view["workItems"] == []
        record = view["data"]["steps"]["work"]
        assert record["history"] == [] and record["by"] == ref_a and record["output"] == {"result": "r"}
        if race.pair == "stolen_token":
            assert record["summary"] == "Holder's work."
        assert passages == 1, f"{passages} completions of one step"
        assert f'"{ref_b}"' not in serialised  # the other agent never shows as having done anything

    def work(index: int):
        """One of the two racing threads: every round, race once; thread 0 also sets up and checks."""
        number = None
        try:
            for number in range(rounds):
                if index == 0:
                    shared["round"] = prepare(number)
                barrier.wait()
                race = shared["round"]
                role = race.roles[index]
                race.answers[role] = race.calls[role](callers[index])
                barrier.wait()
                if index == 0:
                    check(race)
            return None
        except BaseException as error:  # handed to the main thread with the failing round
            barrier.abort()  # the other thread stops at its next barrier instead of waiting forever
            return (None if number is None else PAIRS[number % len(PAIRS)], number, error)

    failures = [result for result in in_threads(2, work) if result is not None]
    real = [f for f in failures if not isinstance(f[2], threading.BrokenBarrierError)] or failures
    if real:
        pair, number, error = real[0]
        raise AssertionError(f"round {number} ({pair}) failed: {error!r}") from error

    per_pair = rounds // len(PAIRS)
    for pair in PAIRS:
        assert sum(seen[pair].values()) == per_pair, (pair, seen[pair])
    print("\nrace outcomes:", {pair: dict(seen[pair]) for pair in PAIRS})
