"""The SVG process map is drawn from the step graph alone; a pure function, tested without a database."""

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from processes.definition import compile_definition
from processes.maps import process_map
from processes.parsing import parse_process
from processes.wording import step_title

FIXTURES = Path(__file__).resolve().parents[2] / "conformance" / "fixtures"
SUPPLIER = """---
name: supplier-onboarding
description: Check a new supplier.
steps:
  - id: check_vendor
    agent: Check the vendor.
    next:
      - { to: approve, when: Vendor is cleared on both lists }
      - { to: decline, when: Any sanctions hit }
  - id: approve
    person: finance-approver
    approve: Approve.
    on_reject: check_vendor
    next: done
  - id: decline
    finish: declined
  - id: done
    finish: onboarded
---
"""


def definition(text: str):
    parsed = parse_process(text)
    assert not parsed.issues, parsed.issues
    return compile_definition(parsed.frontmatter, parsed.body)


def boxes(svg: str) -> dict[str, tuple[float, float]]:
    found = {}
    for step, x, y in re.findall(r'data-step="([^"]+)"><title>[^<]*</title><rect class="map-box" x="([\d.]+)" '
                                 r'y="([\d.]+)"', svg):
        found[step] = (float(x), float(y))
    return found


def test_every_step_is_drawn_once_with_its_kind_and_state():
    svg = process_map(definition(SUPPLIER), states={"check_vendor": {"state": "done"},
                                                     "approve": {"state": "waiting", "overdue": True}})
    ElementTree.fromstring(svg)  # well-formed
    assert re.findall(r'data-step="([^"]+)"', svg) == ["check_vendor", "approve", "decline", "done"]
    assert 'kind-agent state-done" data-step="check_vendor"' in svg
    assert 'kind-approve state-overdue" data-step="approve"' in svg
    assert 'kind-finish state-idle" data-step="done"' in svg


def test_routes_are_labelled_with_their_when_and_rejection_loops_back():
    svg = process_map(definition(SUPPLIER))
    assert ">Vendor is cleared on</tspan>" in svg and ">both lists</tspan>" in svg and ">Any sanctions hit<" in svg
    assert svg.count('class="map-edge reject"') == 1 and ">on reject<" in svg


def test_steps_flow_top_to_bottom_along_next():
    svg = process_map(definition(SUPPLIER))
    at = boxes(svg)
    assert at["check_vendor"][1] < at["approve"][1] == at["decline"][1] < at["done"][1]


def test_text_is_escaped():
    svg = process_map(definition(SUPPLIER.replace("Any sanctions hit", "A <b>&</b> hit")))
    ElementTree.fromstring(svg)
    assert "<b>" not in svg and "&lt;b&gt;&amp;&lt;/b&gt;" in svg


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()) if FIXTURES.exists() else [])
def test_every_conformance_fixture_draws(name):
    compiled = definition((FIXTURES / name / "PROCESS.md").read_text())
    svg = process_map(compiled)
    ElementTree.fromstring(svg)
    assert set(re.findall(r'data-step="([^"]+)"', svg)) == {s.id for s in compiled.steps}


def test_parallel_steps_fork_and_join():
    compiled = definition((FIXTURES / "major-incident" / "PROCESS.md").read_text())
    svg = process_map(compiled, states={"respond": {"state": "waiting"}}, taken={("respond", "operations")})
    assert svg.count('class="map-edge fork') == 3 and svg.count('class="map-join"') == 1
    assert 'class="map-edge fork taken"' in svg
    at = boxes(svg)
    assert at["operations"][1] == at["security"][1] == at["communications"][1] > at["respond"][1]
    assert at["close_review"][1] > at["operations"][1]


def test_step_titles_read_as_words():
    assert step_title("collect_quotes") == "Collect quotes"
    assert step_title("tier1-handoff") == "Tier1 handoff"
