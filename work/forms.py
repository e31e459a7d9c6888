"""Typed form controls built from declared fields (spec §2.3), read back as JSON values, with what is wrong
with them said in words beside the input that holds it.

One control per field; what each type becomes:

- `string`, `number`, `date`, `datetime`, `person`: one typed input (work.cells).
- any field with `one_of`: a select of exactly those values.
- `boolean`: a checkbox when required (unticked is `false`); a Yes/No/blank select when optional,
  so "not given" stays possible.
- `list` whose items have `one_of`: a checkbox per allowed value.
- any other `list`, and `object`: rows of typed cells that can be added and removed (work.grids).

Reading never sends the engine a value the page already knows is wrong. A field with a problem (a cell
that is not a number, an address that names no member) goes to the tool as `null`, which no type accepts,
so the call is refused with every other field's issues at once (spec §6 rule 3); the engine's issue about
that field is then dropped, since the page's own says more precisely where the problem is. A value larger
than a run can hold (limits.runDataBytes) is such a problem, named by its field.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from base.params import read_integer
from processes.wording import field_label
from runs.acceptance import field_spec
from runs.canonical import data_size

from . import cells, grids
from .cells import UTC_OFFSETS, Problem, choice_label, choice_value


@dataclass(frozen=True)
class Members:
    """Who a `person` field may name: `known` returns which of some lower-cased addresses are active members."""

    organization: str
    known: Callable[[set[str]], set[str]]


@dataclass
class Control:
    """One form control for one declared field, with what the person entered and what went wrong."""

    name: str
    prefix: str
    spec: dict
    widget: str
    choices: list[tuple[str, str]] = field(default_factory=list)
    value: str = ""
    values: list[str] = field(default_factory=list)
    offset: str = "+00:00"
    errors: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    grid: grids.Grid | None = None

    @property
    def html_name(self) -> str:
        return f"{self.prefix}-{self.name}"

    @property
    def html_id(self) -> str:
        return f"f-{self.prefix}-{self.name}"

    @property
    def label(self) -> str:
        return field_label(self.name)

    @property
    def type_name(self) -> str:
        kind = self.spec.get("type")
        if kind == "list" and self.spec.get("items") is not None:
            return f"list of {field_spec(self.spec['items']).get('type')}"
        return kind

    @property
    def required(self) -> bool:
        return not self.spec.get("optional", False)

    @property
    def description(self) -> str:
        return self.spec.get("description") or ""

    @property
    def hint(self) -> str:
        if self.grid is not None:
            return _grid_hint(self.grid)
        hints = {
            "datetime": "Date and time, and the UTC offset they are in.",
            "person": "A member of this organization: type part of a name or an email address.",
            "choices": "Tick every one that applies.",
        }
        return hints.get(self.widget, "")

    @property
    def offsets(self) -> list[str]:
        return UTC_OFFSETS

    def has_value(self, option: str) -> bool:
        return option in self.values

    @property
    def picks_person(self) -> bool:
        """Whether the control has an input for a person, which suggests the organization's members."""
        if self.grid is not None:
            return any(c.kind == "person" for c in self.grid.columns)
        return self.widget == "person"

    def attach(self, problem: Problem) -> None:
        """Keep a problem for the summary and show its words where the person fixes it."""
        self.problems.append(problem)
        words = problem.beside(self.label)
        if self.grid is not None and (problem.row is not None or problem.about_column):
            self.grid.attach(problem, words)
        else:
            self.errors.append(words)


def _grid_hint(grid: grids.Grid) -> str:
    if grid.single:
        return "Name each field, choose what kind of value it holds and fill it in."
    if grid.named:
        return "Name the fields every line has, then fill in one line for each item."
    if grid.columns[0].kind == "json" and not grid.chosen:
        return "One line for each item, written as " + cells.JSON_EXAMPLE + "."
    if grid.columns[0].kind == "person":
        return "One line for each person: a member of this organization."
    return "One line for each item; blank lines are left out."


def widget_for(spec: dict) -> str:
    kind = spec.get("type")
    if spec.get("one_of") is not None:
        return "select"
    if kind == "list":
        items = field_spec(spec["items"]) if spec.get("items") is not None else None
        return "choices" if items is not None and items.get("one_of") is not None else "rows"
    if kind == "object":
        return "record"
    if kind == "boolean":
        return "checkbox" if not spec.get("optional") else "yesno"
    return cells.kind_for(spec)


def controls_for(declared: dict | None, prefix: str, data=None, initial: dict | None = None) -> list[Control]:
    """Build one control per declared field, filled from posted `data` or from `initial` JSON values."""
    controls = []
    for name, raw in (declared or {}).items():
        spec = field_spec(raw)
        control = Control(name=name, prefix=prefix, spec=spec, widget=widget_for(spec))
        if control.widget == "select":
            control.choices = [(choice_value(v), choice_label(v)) for v in spec["one_of"]]
        elif control.widget == "choices":
            control.choices = [(choice_value(v), choice_label(v)) for v in field_spec(spec["items"])["one_of"]]
        elif control.widget in ("rows", "record"):
            control.grid = grids.grid_for(spec, control.html_name, control.label)
        if data is not None:
            _take_post(control, data)
        elif initial and name in initial:
            _fill(control, initial[name])
        controls.append(control)
    return controls


def _take_post(control: Control, data) -> None:
    if control.grid is not None:
        grids.fill_from_post(control.grid, data)
        return
    control.value = data.get(control.html_name, "")
    control.values = data.getlist(control.html_name) if hasattr(data, "getlist") else []
    control.offset = data.get(f"{control.html_name}-offset", "+00:00")


def _fill(control: Control, value) -> None:
    """Show an existing JSON value in a control (a held submission, an earlier attempt)."""
    if control.grid is not None:
        grids.fill_from_value(control.grid, value)
    elif control.widget == "choices":
        control.values = [choice_value(v) for v in value] if isinstance(value, list) else []
    elif control.widget == "checkbox":
        control.value = "on" if value is True else ""
    else:
        control.value, control.offset = cells.shown(control.widget, value)


def apply_change(controls: list[Control], op: str | None) -> bool:
    """Apply an "Add a line"/"Remove"/"Add a field" button (`op` is `<html name>:<action>[:<index>]`)."""
    html_name, _, rest = (op or "").partition(":")
    action, _, index = rest.partition(":")
    control = next((c for c in controls if c.grid is not None and c.html_name == html_name), None)
    return control is not None and grids.change(control.grid, action, index)


# --- reading ------------------------------------------------------------------------------------


def _read_one(control: Control) -> tuple[bool, object, list[Problem], list[tuple[str, Problem]]]:
    """Return (present, value, problems, people) for one control's posted text."""
    if control.grid is not None:
        return grids.read_grid(control.grid, control.required)
    widget = control.widget
    if widget == "checkbox":
        return True, bool(control.value), [], []
    if widget == "choices":
        chosen = [cells.read("json", raw)[1] for raw in control.values]
        return bool(chosen) or control.required, chosen, [], []
    kind = "yesno" if widget == "yesno" else widget
    given, value, problem = cells.read(kind, control.value, control.offset)
    problems = [Problem(problem, target=control.html_id)] if problem else []
    people = [(value, Problem("", True, target=control.html_id))] if kind == "person" and given and not problem else []
    return given, value, problems, people


def read_values(controls: list[Control], members: Members | None = None) -> tuple[dict, dict[str, list[Problem]]]:
    """Return the JSON object the controls hold for the engine, and the problems the page found, by field.

    A field with a problem is `null` in the object (see the module's docstring). Addresses in `person`
    fields are checked against `members` in one look-up.
    """
    values: dict = {}
    problems: dict[str, list[Problem]] = {}
    people: list[tuple[str, str, Problem]] = []
    limit = settings.RUN_DATA_BYTES
    for control in controls:
        present, value, found, named = _read_one(control)
        if present:
            values[control.name] = value
        if present and not found and (size := data_size(value)) > limit:
            found = [Problem(too_large(size, limit), target=control.html_id)]
        if found:
            problems[control.name] = found
        people.extend((control.name, email, where) for email, where in named)
    if members is not None and people:
        known = members.known({email.lower() for _name, email, _where in people})
        for name, email, where in people:
            if email.lower() not in known:
                words = f"{email} is not a member of {members.organization}"
                problems.setdefault(name, []).append(dataclasses.replace(where, words=words))
    for name in problems:
        values[name] = None
    return values, problems


# --- placing what is wrong ------------------------------------------------------------------------

# The engine's word that a submission (runs.agent_steps) or a run's inputs (runs.engine) would make its
# data larger than a run may hold.
_RUN_DATA_FULL = re.compile(r"^(?:run data|inputs): (\d+) bytes (?:would )?exceed limits\.runDataBytes \((\d+)\)$")


def size_words(size: int) -> str:
    """A size as a person reads it: `2.0 MB`, `1 MB`, `300 KB`, `12 bytes`."""
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= scale:
            amount = size / scale
            return f"{amount:.0f} {unit}" if amount == int(amount) else f"{amount:.1f} {unit}"
    return f"{size} bytes"


def too_large(size: int, limit: int) -> str:
    """The words after a field's label for a value larger than a run can hold."""
    return f"is {size_words(size)}; the most a run can hold is {size_words(limit)}"


def _run_data_full(controls: list[Control], total: int, limit: int) -> tuple[Control, Problem] | None:
    """Name the largest field for the engine's "run data would exceed limits.runDataBytes", in words."""
    sizes = []
    for control in controls:
        present, value, found, _people = _read_one(control)
        if present and not found:
            sizes.append((data_size(value), control))
    if not sizes:
        return None
    size, control = max(sizes, key=lambda pair: pair[0])
    words = (f"is {size_words(size)}; with the rest of the run that makes {size_words(total)}, "
             f"and the most a run can hold is {size_words(limit)}")
    return control, Problem(words, target=control.html_id)


def _field_of(issue: str, prefix: str, names: list[str]) -> tuple[str, str] | None:
    """Split `output.lines[2]: expected number` into (`lines`, `[2]: expected number`) when `lines` is a field."""
    for name in names:  # longest first: a name may begin with another
        head = f"{prefix}.{name}"
        if issue.startswith(head) and issue[len(head):len(head) + 1] in ("[", ":", "."):
            return name, issue[len(head):].removeprefix(": ")
    return None


def _engine_problem(control: Control, message: str) -> Problem:
    """An engine issue about a field, placed on the line and field it names and worded for a person.

    `message` is what follows the field's name: `missing`, `[2]: expected number`, or, for text no database
    stores, `[0].merchant: …` or `.po: …`.
    """
    grid = control.grid
    if grid is None or not message.startswith(("[", ".")):
        return Problem(*cells.phrase(message), target=control.html_id)
    row, column = (0 if grid.single else None), (None if grid.named else 0)
    if message.startswith("["):
        index, _, message = message[1:].partition("]")
        position = read_integer(index)
        position = len(grid.value_rows) if position is None else position
        row = grid.value_rows[position] if position < len(grid.value_rows) else None
    if message.startswith(".") and grid.named:
        name, _, message = message[1:].partition(": ")
        column = next((j for j, c in enumerate(grid.columns) if c.name == name), None)
    return grid.problem(row, column, *cells.phrase(message.removeprefix(": ")))


def place_problems(controls: list[Control], problems: dict[str, list[Problem]] | None, issues: list[str] | None,
                   prefix: str, others: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Show every problem beside its input, and return the engine's other issues by what they are about.

    The page's own problems come first; an engine issue about a field the page found a problem in is left
    out, so nothing is said twice. `note: …` goes under `note` when `note` is one of `others`; the rest under ``.
    """
    problems = problems or {}
    by_name = {c.name: c for c in controls}
    names = sorted(by_name, key=len, reverse=True)
    for name, found in problems.items():
        for problem in found:
            by_name[name].attach(problem)
    placed: dict[str, list[str]] = {}
    for issue in issues or []:
        if full := _RUN_DATA_FULL.match(issue):
            total, limit = int(full.group(1)), int(full.group(2))
            if (largest := _run_data_full(controls, total, limit)) is not None:
                largest[0].attach(largest[1])
                continue
            issue = f"All this would make the run {size_words(total)}; the most a run can hold is {size_words(limit)}"
        hit = _field_of(issue, prefix, names)
        if hit is not None:
            name, message = hit
            if name not in problems:
                by_name[name].attach(_engine_problem(by_name[name], message))
            continue
        head = issue.split(":", 1)[0].split(" ", 1)[0].split("[", 1)[0]
        placed.setdefault(head if head in others else "", []).append(issue)
    return placed


def _place(problem: Problem) -> tuple:
    """Where a problem is in its field, for listing them in the order the person reads the form."""
    return (problem.row is not None, problem.row or 0, problem.column or 0)


def summary(controls: list[Control], placed: dict[str, list[str]]) -> list[dict]:
    """Everything to fix, in the order of the form: each problem in words with a link to its input."""
    lines = [{"text": issue, "href": ""} for issue in placed.get("", [])]
    for control in controls:
        found = sorted(control.problems, key=_place)
        lines += [{"text": p.summary(control.label), "href": f"#{p.target}"} for p in found]
    lines += [{"text": _worded(key, issue), "href": ""} for key, found in placed.items() if key for issue in found]
    return lines


def _worded(key: str, issue: str) -> str:
    """`summary: Summary is 2.0 MB; …` as `Summary is 2.0 MB; …`: an issue that names its field in words."""
    rest = issue.removeprefix(f"{key}: ")
    return rest if rest.startswith(f"{field_label(key)} ") else issue
