"""`agentprocess-conformance`: run every check against one server and report; exit 0 only when none failed."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from . import __version__, scenarios
from . import fixtures as fixture_files
from .config import MCP_VERSIONS, ConfigError, build, read_file
from .context import connect
from .framework import FAILED, SECTIONS, run_section
from .oauth import AuthorizationProblem
from .report import Printer, as_json, write_json, write_junit
from .schemas import Ledger, Schemas
from .transport import VERSIONS
from .web import HttpError

EXIT_PASSED, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
# Every other section reads what these two learn (the offered tools and profiles, the published processes).
FOUNDATION = ("describe", "publication")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentprocess-conformance",
        usage="%(prog)s [check-config] [options]",
        description="Test an agentprocess (core-2) server through the protocol: MCP, and REST where offered.",
        epilog="`agentprocess-conformance check-config --config FILE` checks the set-up alone, one line per problem. "
               "docs/conformance.md in the agentprocess server's repository describes the configuration file.",
    )
    parser.add_argument("--config", type=Path, help="a JSON or YAML file: URL, agents, people, organizations, fixtures")
    parser.add_argument("--url", help="the server's MCP endpoint, or its base URL (then /mcp)")
    parser.add_argument("--client", action="append", default=[], metavar="ID:SECRET",
                        help="an agent's client credentials; give two for the checks that need a second agent")
    parser.add_argument("--token", action="append", default=[], metavar="TOKEN", help="an agent's ready bearer token")
    parser.add_argument("--rest", metavar="URL", help="the REST form of the tools, e.g. /api/tools/ (relative to the base URL)")
    parser.add_argument("--max-wait", type=float, help="the longest wait a check may make for a lease or timer (default 30 s)")
    parser.add_argument("--mcp", choices=MCP_VERSIONS, metavar="VERSION",
                        help="the MCP revision the checks speak: auto (2026-07-28 when the server speaks it, else "
                             f"2025-11-25; the default), or one of {', '.join(VERSIONS)}")
    parser.add_argument("--section", action="append", default=[], metavar="KEY",
                        help=f"run only these sections (describe and publication always run): {', '.join(s.key for s in SECTIONS)}")
    parser.add_argument("--report-json", type=Path, metavar="PATH", help="write the results as JSON")
    parser.add_argument("--junit", type=Path, metavar="PATH", help="write the results as JUnit XML")
    parser.add_argument("--list", action="store_true", help="list every check and exit")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help="write the fixtures and the runner's probe process to DIR, one folder each, and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show each check's duration")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def overrides_from(arguments: argparse.Namespace) -> dict:
    agents = [{"client_id": pair.partition(":")[0], "client_secret": pair.partition(":")[2]} for pair in arguments.client]
    agents += [{"token": token} for token in arguments.token]
    return {"url": arguments.url, "agents": agents or None, "rest": arguments.rest, "max_wait": arguments.max_wait,
            "mcp_protocol_version": arguments.mcp}


def list_checks() -> None:
    for section in SECTIONS:
        print(f"{section.key}: {section.title} ({section.spec})")
        for check in section.checks:
            print(f"  {check.id}: {check.title} [{check.spec}]")


def export(folder: Path) -> list[str]:
    """Copy every fixture and probe into folder/<name>/PROCESS.md, for publishing with a server's own tools."""
    names = fixture_files.all_names()
    for name, fixture in fixture_files.load(names).items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / fixture_files.PROCESS_FILE).write_text(fixture.text, encoding="utf-8")
    return names


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check-config"]:
        return check_config(argv[1:])
    arguments = parser().parse_args(argv)
    scenarios.load()
    if arguments.list:
        list_checks()
        return EXIT_PASSED
    if arguments.export:
        for name in export(arguments.export):
            print(arguments.export / name / fixture_files.PROCESS_FILE)
        return EXIT_PASSED
    unknown = [key for key in arguments.section if key not in {section.key for section in SECTIONS}]
    if unknown:
        print(f"unknown section: {', '.join(unknown)}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        config = build(read_file(arguments.config) if arguments.config else {}, overrides=overrides_from(arguments))
    except (ConfigError, OSError, ValueError) as exc:
        print(f"configuration: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    schemas, ledger = Schemas(), Ledger()
    started = now()
    try:
        context = connect(config, schemas, ledger)
    except (AuthorizationProblem, HttpError, ConfigError, ValueError) as exc:
        print(f"cannot reach {config.mcp_url}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    printer = Printer(verbose=arguments.verbose)
    print(f"agentprocess conformance {__version__}: {config.mcp_url} (MCP {context.mcp_version})")
    results = []
    for section in SECTIONS:
        if arguments.section and section.key not in arguments.section and section.key not in FOUNDATION \
                and section.key != "answers":
            continue
        printer.heading(section)
        results += run_section(section, context, printer.result)
    printer.summary(results)
    report = as_json(results, server=config.mcp_url, describe=context.describe, started=started, finished=now())
    if arguments.report_json:
        write_json(arguments.report_json, report)
    if arguments.junit:
        write_junit(arguments.junit, results, server=config.mcp_url)
    return EXIT_FAILED if any(result.status == FAILED for result in results) else EXIT_PASSED


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_config(argv: list[str]) -> int:
    """Check the set-up without running any check: each problem on one line with what to do about it."""
    from .preflight import problems_of

    arguments = parser().parse_args(argv)
    try:
        config = build(read_file(arguments.config) if arguments.config else {}, overrides=overrides_from(arguments))
    except (ConfigError, OSError, ValueError) as exc:
        for line in str(exc).splitlines():
            print(f"configuration: {line}")
        return EXIT_UNUSABLE
    found = 0
    for ok, line in problems_of(config):
        print(("ok       " if ok else "PROBLEM  ") + line, flush=True)
        found += not ok
    print(f"\n{found} problem{'s' if found != 1 else ''}" if found else "\nready to run")
    return EXIT_UNUSABLE if found else EXIT_PASSED
