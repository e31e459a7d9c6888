"""The results, for a person (one line per check, by section) and for CI (JSON, JUnit XML)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from . import __version__
from .framework import FAILED, PASSED, SKIPPED, Result, Section

MARKS = {PASSED: "PASS", FAILED: "FAIL", SKIPPED: "SKIP"}


class Printer:
    """Print each section's heading and each check's line as it completes."""

    def __init__(self, stream=None, *, verbose: bool = False):
        self.stream = stream or sys.stdout
        self.verbose = verbose

    def heading(self, section: Section) -> None:
        print(f"\n{section.title} ({section.spec})", file=self.stream, flush=True)

    def result(self, result: Result) -> None:
        line = f"  {MARKS[result.status]}  {result.check.title}  [{result.check.spec}]"
        if result.status != PASSED and result.message:
            line += f"\n        {result.message}"
        if result.status == FAILED and result.exchanges:
            line += f"\n        last exchange: {exchange_line(result.exchanges[-1])}"
        elif self.verbose:
            line += f"  ({result.seconds:.2f} s)"
        print(line, file=self.stream, flush=True)

    def summary(self, results: list[Result]) -> None:
        counts = summarize(results)
        print(f"\n{counts['total']} checks: {counts['passed']} passed, {counts['failed']} failed, "
              f"{counts['skipped']} skipped", file=self.stream, flush=True)
        failed = [result for result in results if result.status == FAILED]
        if failed:
            print("Failed: " + ", ".join(result.check.id for result in failed), file=self.stream, flush=True)


def exchange_line(exchange: dict) -> str:
    """One line for the console: what was sent where and what came back, shortened."""
    what = f" ({exchange['tool']})" if exchange.get("tool") else ""
    answer = exchange["response"]
    answer = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return f"{exchange['method']} {exchange['path']}{what} → {exchange['status']}: {answer[:300]}"


def summarize(results: list[Result]) -> dict[str, int]:
    counts = Counter(result.status for result in results)
    return {"total": len(results), PASSED: counts[PASSED], FAILED: counts[FAILED], SKIPPED: counts[SKIPPED]}


def as_json(results: list[Result], *, server: str, describe: dict, started: str, finished: str) -> dict:
    return {
        "runner": {"name": "agentprocess-conformance", "version": __version__},
        "server": server,
        "protocol": {key: describe.get(key) for key in ("version", "profiles", "leaseSeconds")} if describe else None,
        "startedAt": started,
        "finishedAt": finished,
        "summary": summarize(results),
        "checks": [
            {
                "id": result.check.id,
                "section": result.section.key,
                "title": result.check.title,
                "spec": result.check.spec,
                "status": result.status,
                "message": result.message,
                "seconds": round(result.seconds, 3),
                **({"exchanges": result.exchanges} if result.exchanges else {}),
            }
            for result in results
        ],
    }


def write_json(path: Path, report: dict) -> None:
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_junit(path: Path, results: list[Result], *, server: str) -> None:
    """One testsuite per section, one testcase per check; a skipped check is <skipped>, a failed one <failure>."""
    suites = ET.Element("testsuites", name=f"agentprocess conformance: {server}")
    by_section: dict[str, list[Result]] = {}
    for result in results:
        by_section.setdefault(result.section.key, []).append(result)
    for key, section_results in by_section.items():
        counts = summarize(section_results)
        suite = ET.SubElement(suites, "testsuite", name=section_results[0].section.title, tests=str(counts["total"]),
                              failures=str(counts[FAILED]), skipped=str(counts[SKIPPED]), errors="0",
                              time=f"{sum(result.seconds for result in section_results):.3f}")
        for result in section_results:
            case = ET.SubElement(suite, "testcase", classname=f"agentprocess.{key}", name=result.check.id,
                                 time=f"{result.seconds:.3f}")
            ET.SubElement(case, "system-out").text = f"{result.check.title} [{result.check.spec}]"
            if result.status == FAILED:
                ET.SubElement(case, "failure", message=result.message[:500]).text = result.message
            elif result.status == SKIPPED:
                ET.SubElement(case, "skipped", message=result.message[:500])
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
