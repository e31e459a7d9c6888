"""The layers docs/architecture.md draws hold: imports point down, and no module reaches into another's
underscore names."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Each app and the apps it may import; config wires everything, bench and tests stand outside.
LAYERS = {
    "base": set(),
    "accounts": {"base"},
    "processes": {"base", "accounts"},
    "runs": {"base", "accounts", "processes"},
    "api": {"base", "accounts", "processes", "runs"},
    "work": {"base", "accounts", "processes", "runs"},
    "config": {"base", "accounts", "processes", "runs", "api", "work"},
}
# Underscore names Django documents for applications: Model._meta (the Options API), Model._state
# (the instance's ModelState), the _default_manager and _base_manager of a model.
DOCUMENTED = {"_meta", "_state", "_default_manager", "_base_manager"}


def modules():
    for app in LAYERS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield app, path


def imported_apps(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & set(LAYERS) | ({"bench"} & names)


@pytest.mark.parametrize("app", sorted(LAYERS))
def test_an_app_imports_only_the_layers_below_it(app):
    wrong = []
    for owner, path in modules():
        if owner != app:
            continue
        upward = imported_apps(ast.parse(path.read_text())) - LAYERS[app] - {app}
        if upward:
            wrong.append(f"{path.relative_to(ROOT)} imports {sorted(upward)}")
    assert not wrong, "\n".join(wrong)


def test_no_module_reads_another_objects_underscore_names():
    reaches = []
    for _app, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not re.match(r"_[A-Za-z]", node.attr):
                continue
            if node.attr in DOCUMENTED or node.attr.startswith("__"):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            reaches.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert not reaches, "\n".join(reaches)


MAX_LINES = 600


def test_no_module_is_longer_than_a_newcomer_can_hold():
    long = [f"{path.relative_to(ROOT)}: {count} lines" for _app, path in modules()
            if (count := len(path.read_text().splitlines())) > MAX_LINES]
    assert not long, "\n".join(long)


def test_only_runs_names_the_run_tables_in_sql():
    from django.apps import apps

    models = list(apps.get_app_config("runs").get_models())
    tables = {model._meta.db_table for model in models}
    names = "|".join(sorted(model.__name__ for model in models))
    named = re.compile(rf"\b({'|'.join(sorted(tables))})\b|\b({names})\._meta\.db_table\b")
    found = []
    for app, path in modules():
        if app == "runs":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if named.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
