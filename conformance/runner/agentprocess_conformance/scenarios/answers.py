"""Every answer of the whole run, checked against the official JSON Schemas and the MCP result shape.

This section runs last: each check reads what the ledger gathered while the other sections ran.
"""

from __future__ import annotations

from ..exchanges import LOG, REPORTED
from ..framework import Skip, section
from ..schemas import ERROR_SCHEMA, SHOWN_VIOLATIONS, TOOLS

CHECKS = [
    ("answers.envelope", "every answer is {ok: true, data} or {ok: false, error} and nothing else", "tools.md"),
    ("answers.errors", "every error matches tool-error.json: a known code, a message, issues as strings",
     "spec §4.3; schemas/core-2/tool-error.json"),
    *[(f"answers.{tool}", f"every {tool} result matches tools/{tool}.result.json",
       f"tools.md {tool}; schemas/core-2") for tool in TOOLS],
    ("answers.mcp", "every MCP tools/call result carries the envelope, isError exactly when ok is false",
     "spec §4; MCP tools"),
]


def verdict(ledger, schema: str) -> None:
    if not ledger.counts.get(schema):
        raise Skip("no such answer during this run")
    violations = ledger.violations.get(schema) or []
    shown = "; ".join(violations[:SHOWN_VIOLATIONS])
    more = len(violations) - SHOWN_VIOLATIONS
    if violations:
        problem = AssertionError(shown + (f"; and {more} more" if more > 0 else ""))
        problem.exchanges = LOG.numbered(ledger.exchanges.get(schema, [])[-REPORTED:])
        raise problem


@section("answers", "Answers against the official schemas", "tools.md; schemas/core-2", CHECKS)
def answers(context, rec):
    with rec.check("answers.envelope"):
        verdict(context.ledger, "envelope")
    with rec.check("answers.errors"):
        verdict(context.ledger, ERROR_SCHEMA)
    for tool in TOOLS:
        with rec.check(f"answers.{tool}"):
            verdict(context.ledger, f"{tool}.result")
    with rec.check("answers.mcp"):
        results = sum(session.facts.results for session in context.sessions)
        if not results:
            raise Skip("no tools/call was answered over MCP")
        problems = [problem for session in context.sessions for problem in session.facts.result_problems]
        assert not problems, f"{len(problems)} of {results} results: " + "; ".join(problems[:SHOWN_VIOLATIONS])
