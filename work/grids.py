"""A list or an object as rows of typed cells (spec §2.3), instead of JSON text.

- A list of plain values (`items: number`, `items: person`, …) is one row a line, one cell of the item's type.
- A list of lists is one row a line whose cell holds JSON.
- A list whose items are objects is one row a line, one cell for each field of the object. The spec declares
  no fields for an object, so the person names the fields and chooses what kind each holds; a field's
  kind is read from the values when the form starts from an earlier one.
- A list that declares no `items` is one cell a line, of a kind the person chooses.
- An object is one line of named fields.

The rows are plain indexed inputs (`output-lines-0-1` is line 0, field 1; `output-lines-row` lists the lines
sent and `output-lines-col` the fields), so the form works without JavaScript: "Add a line" and "Remove"
are submit buttons whose `op` the page applies before showing the form again, everything typed kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from base.params import read_integer
from runs.acceptance import check_value, field_spec

from . import cells
from .cells import Problem

FIRST_FIELD_KIND = "text"
# More than a form is for: a longer list is a file to attach, or an agent's work.
MAX_LINES = 500
# A line's or field's number as the browser sends it back: anything larger was never shown.
_MAX_INDEX = 99_999
MAX_FIELDS = 50


@dataclass
class Column:
    """One cell of every line: an object's field (named), or the one value of a list of plain values."""

    name: str
    kind: str
    spec: dict | None = None  # the declared item type, when the process gives one
    errors: list[str] = field(default_factory=list)

    def label(self, position: int) -> str:
        # The person named it: the name stays as they typed it (the page's script shows it so as they type).
        return self.name or f"Field {position + 1}"


@dataclass
class Cell:
    """One input of one line, as the template draws it."""

    html_name: str
    html_id: str
    kind: str
    label: str
    column: int
    value: str = ""
    offset: str = "+00:00"
    choices: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    focus: bool = False

    @property
    def offsets(self) -> list[str]:
        return cells.UTC_OFFSETS


@dataclass
class Row:
    index: int | str
    number: int | str
    cells: list[Cell]
    errors: list[str] = field(default_factory=list)


@dataclass
class Grid:
    """The rows of one list or object field: its columns, and the text of every cell by line and column."""

    html_name: str
    label: str
    named: bool  # the cells are an object's fields
    single: bool  # one object: exactly one line
    chosen: bool  # the person chooses each column's kind (the process declares none)
    columns: list[Column]
    lines: list[list[tuple[str, str]]] = field(default_factory=list)  # per line, per column: (text, offset)
    cell_errors: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    line_errors: dict[int, list[str]] = field(default_factory=dict)
    value_rows: list[int] = field(default_factory=list)  # the line each item of the value read came from
    focus: tuple[int, int] | None = None
    posted_rows: list[int] = field(default_factory=list)
    posted_columns: list[int] = field(default_factory=list)
    too_many: bool = False  # more lines or fields were sent than a form takes; only the first are shown

    # --- what the template draws -------------------------------------------------------------

    @property
    def rows(self) -> list[Row]:
        return [self._row(i, i + 1, line) for i, line in enumerate(self.lines)]

    @property
    def blank_row(self) -> Row:
        """A line with no values, its index and number left for the page's script to fill in."""
        return self._row("__row__", "__line__", [("", "+00:00")] * len(self.columns))

    @property
    def column_rows(self) -> list[dict]:
        return [{"index": j, "number": j + 1, "column": c, "html": f"{self.html_name}-col-{j}"}
                for j, c in enumerate(self.columns)]

    @property
    def record_fields(self) -> list[tuple[dict, Cell]]:
        """An object's fields, each with the cell holding its value."""
        return list(zip(self.column_rows, self.rows[0].cells, strict=True))

    @property
    def kinds(self) -> list[tuple[str, str]]:
        return list(cells.CHOSEN_KINDS.items())

    @property
    def has_json(self) -> bool:
        return any(c.kind == "json" for c in self.columns)

    def cell_id(self, row: int, column: int) -> str:
        return f"f-{self.html_name}-{row}-{column}"

    def _row(self, index, number, line) -> Row:
        row_cells = []
        for j, (column, (text, offset)) in enumerate(zip(self.columns, line, strict=True)):
            label = column.label(j) if self.named else f"{self.label}, line {number}"
            choices = []
            if column.kind == "select" and column.spec:
                choices = [(cells.choice_value(v), cells.choice_label(v)) for v in column.spec["one_of"]]
            row_cells.append(Cell(
                html_name=f"{self.html_name}-{index}-{j}", html_id=f"f-{self.html_name}-{index}-{j}",
                kind=column.kind, label=label, column=j, value=text, offset=offset, choices=choices,
                errors=self.cell_errors.get((index, j), []) if isinstance(index, int) else [],
                focus=self.focus == (index, j),
            ))
        errors = self.line_errors.get(index, []) if isinstance(index, int) else []
        return Row(index=index, number=number, cells=row_cells, errors=errors)

    # --- problems, placed where they belong ----------------------------------------------------

    def problem(self, row: int | None, column: int | None, text: str, sentence: bool) -> Problem:
        """A problem with one line (and one of its fields), naming them as the person sees them."""
        line = None if self.single or row is None else row + 1
        part = self.columns[column].label(column) if self.named and column is not None else None
        target = self.cell_id(row, column) if row is not None and column is not None else f"f-{self.html_name}"
        return Problem(text, sentence, line=line, part=part, row=row, column=column, target=target)

    def attach(self, problem: Problem, words: str) -> None:
        """Show one problem's words beside its cell, its column's name, or its line."""
        if problem.about_column:
            self.columns[problem.column].errors.append(words)
        elif problem.column is not None and problem.row is not None:
            self.cell_errors.setdefault((problem.row, problem.column), []).append(words)
        else:
            self.line_errors.setdefault(problem.row, []).append(words)


# --- building -----------------------------------------------------------------------------------


def grid_for(spec: dict, html_name: str, label: str) -> Grid:
    """An empty grid for a `list` or `object` field: one blank line, and one blank field for an object."""
    if spec.get("type") == "object":
        return Grid(html_name, label, named=True, single=True, chosen=True,
                    columns=[Column("", FIRST_FIELD_KIND)], lines=[[("", "+00:00")]])
    items = field_spec(spec["items"]) if spec.get("items") is not None else None
    if items is not None and items.get("type") == "object":
        grid = Grid(html_name, label, named=True, single=False, chosen=True, columns=[Column("", FIRST_FIELD_KIND)])
    elif items is not None:
        grid = Grid(html_name, label, named=False, single=False, chosen=False,
                    columns=[Column("", cells.kind_for(items), spec=items)])
    else:
        grid = Grid(html_name, label, named=False, single=False, chosen=True, columns=[Column("", FIRST_FIELD_KIND)])
    grid.lines = [[("", "+00:00")]]
    return grid


def _indexes(texts: list[str]) -> list[int]:
    return list(dict.fromkeys(i for i in (read_integer(t, maximum=_MAX_INDEX) for t in texts) if i is not None))


def fill_from_post(grid: Grid, data) -> None:
    """Take the lines and fields a browser sent, in the order it sent them."""
    h = grid.html_name
    if grid.chosen:
        grid.posted_columns = _indexes(data.getlist(f"{h}-col"))
        grid.too_many = grid.too_many or len(grid.posted_columns) > MAX_FIELDS
        grid.posted_columns = grid.posted_columns[:MAX_FIELDS]
        grid.columns = [
            Column(
                name=data.get(f"{h}-col-{j}-name", "").strip() if grid.named else "",
                kind=data.get(f"{h}-col-{j}-kind") if data.get(f"{h}-col-{j}-kind") in cells.CHOSEN_KINDS else "text",
            )
            for j in grid.posted_columns
        ]
    else:
        grid.posted_columns = [0]
    grid.posted_rows = [0] if grid.single else _indexes(data.getlist(f"{h}-row"))
    grid.too_many = grid.too_many or len(grid.posted_rows) > MAX_LINES
    grid.posted_rows = grid.posted_rows[:MAX_LINES]
    grid.lines = [
        [(data.get(f"{h}-{i}-{j}", ""), data.get(f"{h}-{i}-{j}-offset", "+00:00")) for j in grid.posted_columns]
        for i in grid.posted_rows
    ]


def fill_from_value(grid: Grid, value) -> None:
    """Show a JSON value someone already gave (a held submission, an earlier attempt) as lines."""
    if grid.single:
        value = value if isinstance(value, dict) else {}
        grid.columns = [Column(k, cells.kind_of_value(v)) for k, v in value.items()] or grid.columns
        grid.lines = [[cells.shown(c.kind, value.get(c.name)) for c in grid.columns]]
        return
    items = value if isinstance(value, list) else []
    if grid.named:
        items = [item for item in items if isinstance(item, dict)]
        names = list(dict.fromkeys(k for item in items for k in item))
        if names:
            grid.columns = [Column(k, cells.kind_of_values([i[k] for i in items if k in i])) for k in names]
        grid.lines = [[cells.shown(c.kind, item.get(c.name)) for c in grid.columns] for item in items]
    else:
        if grid.chosen and items:
            grid.columns = [Column("", cells.kind_of_values(items))]
        grid.lines = [[cells.shown(grid.columns[0].kind, item)] for item in items]
    if not grid.lines:
        grid.lines = [[("", "+00:00")] * len(grid.columns)]


# --- adding and removing lines and fields ---------------------------------------------------------


def change(grid: Grid, action: str, posted_index: str) -> bool:
    """Apply one "Add a line", "Remove", "Add a field" or "Remove field" button; say whether it was one."""
    if action == "add-row" and not grid.single and len(grid.lines) < MAX_LINES:
        grid.lines.append([("", "+00:00")] * len(grid.columns))
        grid.focus = (len(grid.lines) - 1, 0)
        return True
    if action == "add-col" and grid.chosen and grid.named and len(grid.columns) < MAX_FIELDS:
        grid.columns.append(Column("", FIRST_FIELD_KIND))
        for line in grid.lines:
            line.append(("", "+00:00"))
        return True
    index = read_integer(posted_index, maximum=_MAX_INDEX)
    if action == "remove-row" and not grid.single and index in grid.posted_rows:
        del grid.lines[grid.posted_rows.index(index)]
        return True
    if action == "remove-col" and grid.chosen and grid.named and index in grid.posted_columns:
        position = grid.posted_columns.index(index)
        del grid.columns[position]
        for line in grid.lines:
            del line[position]
        return True
    return False


# --- reading ------------------------------------------------------------------------------------


def _usable_columns(grid: Grid) -> tuple[list[int], list[Problem]]:
    """The columns whose cells make the value: a named field needs a name, and one name is used once."""
    if not grid.named:
        return [0], []
    usable, problems, seen = [], [], {}
    for j, column in enumerate(grid.columns):
        filled = any(line[j][0].strip() for line in grid.lines)
        if not column.name:
            if filled:
                problems.append(_column_problem(grid, j, f"Field {j + 1} needs a name"))
            continue
        if column.name in seen:
            problems.append(_column_problem(grid, j, f"Field {j + 1} has the same name as field {seen[column.name] + 1}"))
            continue
        seen[column.name] = j
        usable.append(j)
    return usable, problems


def _column_problem(grid: Grid, column: int, text: str) -> Problem:
    return Problem(text, True, column=column, about_column=True, target=f"f-{grid.html_name}-col-{column}-name")


def _read_cell(grid: Grid, row: int, column: int) -> tuple[bool, object, list[Problem]]:
    spec = grid.columns[column].spec
    text, offset = grid.lines[row][column]
    # A cell is one line: spaces around it are not part of the value (a field's own textarea keeps them).
    given, value, problem = cells.read(grid.columns[column].kind, text.strip(), offset)
    if problem:
        return given, value, [grid.problem(row, column, problem, False)]
    problems = []
    if given and spec is not None:
        # The process declares this item's type: the engine's own check, worded for the cell.
        for issue in check_value(spec, value, ""):
            problems.append(grid.problem(row, column, *cells.phrase(issue.removeprefix(": "))))
    return given, value, problems


def read_grid(grid: Grid, required: bool) -> tuple[bool, object, list[Problem], list[tuple[str, Problem]]]:
    """Return (given, value, problems, people): the JSON the lines hold, what is wrong in them, and each
    address typed into a person cell with the problem to report if it names no member."""
    columns, problems = _usable_columns(grid)
    if grid.too_many:
        problems.append(Problem(f"takes at most {MAX_LINES} lines of {MAX_FIELDS} fields each; attach a longer "
                                "list as a file", target=f"f-{grid.html_name}"))
    people: list[tuple[str, Problem]] = []
    items: list = []
    grid.value_rows = []
    for i in range(len(grid.lines)):
        item: dict = {}
        for j in columns:
            given, value, found = _read_cell(grid, i, j)
            problems.extend(found)
            if given:
                item[grid.columns[j].name] = value
                if grid.columns[j].kind == "person" and not found:
                    people.append((value, grid.problem(i, j, "", True)))
        if item or grid.single:
            items.append(item if grid.named else item[""])
            grid.value_rows.append(i)
    if grid.single:
        value = items[0]
        return bool(value) or required, value, problems, people
    return bool(items) or required, items, problems, people
