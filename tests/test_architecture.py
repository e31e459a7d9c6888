"""The layers docs/architecture.md draws hold: imports point down, and so do the templates and URL names
a module or an app's template names; no module reaches into another's underscore names, or is longer
than MAX_LINES; and docs/architecture.md names every module."""

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


# --- templates and URL names belong to the app that names them first ------------------------------

TEMPLATES = ROOT / "templates"
TEMPLATE_NAME = re.compile(r"^(?:admin/)?([a-z_]+)/[\w./-]+\.(?:html|txt)$")
REVERSING = {"reverse", "reverse_lazy", "redirect", "resolve_url"}


def template_app(name: str) -> str | None:
    """The app a template belongs to, by its folder (templates/<app>/ or templates/admin/<app>/)."""
    found = TEMPLATE_NAME.match(name)
    return found.group(1) if found and found.group(1) in LAYERS else None


def url_names() -> dict[str, str]:
    """Every URL name an app's urls.py defines, with the app defining it."""
    names = {}
    for app in LAYERS:
        urls = ROOT / app / "urls.py"
        if not urls.exists():
            continue
        for node in ast.walk(ast.parse(urls.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "name" and isinstance(node.value, ast.Constant):
                names[node.value.value] = app
    return names


def named_in_module(source: str) -> tuple[set[str], set[str]]:
    """The template names a module's string literals hold, and the URL names it reverses."""
    templates, urls = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and template_app(node.value):
            templates.add(node.value)
        elif isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            arguments = node.args[:1] if func in REVERSING else []
            arguments += [k.value for k in node.keywords if k.arg in ("url_name", "pattern_name")]
            urls.update(a.value for a in arguments if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return templates, urls


def named_in_template(text: str) -> tuple[set[str], set[str]]:
    """The templates a template extends or includes, and the URL names its {% url %} tags reverse."""
    templates = set(re.findall(r"{%\s*(?:extends|include)\s+[\"']([^\"']+)[\"']", text))
    urls = set(re.findall(r"{%\s*url\s+[\"']([^\"']+)[\"']", text))
    return templates, urls


def reaching_up(app: str, templates: set[str], urls: set[str], defined: dict[str, str]) -> list[str]:
    allowed = LAYERS[app] | {app}
    up = [f"template {name}" for name in sorted(templates) if template_app(name) not in allowed | {None}]
    return up + [f"URL name {name!r} ({defined[name]}/urls.py)" for name in sorted(urls)
                 if defined.get(name, app) not in allowed]


def test_a_module_names_no_template_or_url_name_of_an_app_above_it():
    defined, wrong = url_names(), []
    for app, path in modules():
        for what in reaching_up(app, *named_in_module(path.read_text()), defined):
            wrong.append(f"{path.relative_to(ROOT)} names {what}")
    assert not wrong, "\n".join(wrong)


def test_an_apps_templates_name_no_template_or_url_name_of_an_app_above_it():
    defined, wrong = url_names(), []
    for path in sorted(TEMPLATES.rglob("*")):
        app = template_app(path.relative_to(TEMPLATES).as_posix()) if path.is_file() else None
        if app is None:
            continue  # the project's own templates (base.html, partials/, allauth's) wire everything
        for what in reaching_up(app, *named_in_template(path.read_text()), defined):
            wrong.append(f"{path.relative_to(ROOT)} names {what}")
    assert not wrong, "\n".join(wrong)


def test_naming_a_page_above_is_found_in_a_module_and_a_template():
    defined = {"inbox": "work", "file-download": "runs"}
    source = 'render_to_string("work/email/notice.txt")\nreverse("inbox")\nreverse("file-download")\n'
    assert reaching_up("runs", *named_in_module(source), defined) == [
        "template work/email/notice.txt", "URL name 'inbox' (work/urls.py)"]
    text = '{% include "work/partials/people.html" %}<a href="{% url \'inbox\' %}">'
    assert reaching_up("processes", *named_in_template(text), defined) == [
        "template work/partials/people.html", "URL name 'inbox' (work/urls.py)"]
    assert reaching_up("work", *named_in_template(text), defined) == []


# --- docs/architecture.md names every module --------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def named_modules() -> dict[str, list[str]]:
    """Each app's modules as paths inside the app; empty files (package markers) hold nothing to name."""
    named: dict[str, list[str]] = {app: [] for app in LAYERS}
    for app, path in modules():
        if path.read_text().strip():
            named[app].append(path.relative_to(ROOT / app).as_posix())
    return named


def unnamed(doc: str, apps: dict[str, list[str]]) -> list[str]:
    """The modules a document names nowhere.

    A module is named by its path (`runs/search.py`) anywhere, or in its app's section (a heading naming
    `<app>/`) by its path inside the app or, when no other module of the app shares it, its file name.
    A package's `__init__.py` is named with the package: the app's by its section, a folder's by
    `<folder>/`. What the section "In every app" names counts in every app's.
    """
    everywhere = set(re.findall(r"`([^`]+)`", doc))
    sections: dict[str, set[str]] = {app: set() for app in apps}
    common: set[str] = set()
    for part in re.split(r"^(?=#{2,3} )", doc, flags=re.MULTILINE):
        heading = part.splitlines()[0] if part else ""
        words = set(re.findall(r"`([^`]+)`", part))
        if re.match(r"#{2,3} In every app", heading):
            common |= words
        for app in apps:
            if f"`{app}/`" in heading:
                sections[app] |= words | {"__init__.py"}
    missing = []
    for app, paths in apps.items():
        names = sections[app] | common if sections[app] else set()
        shared = {name for name in {p.rsplit("/", 1)[-1] for p in paths}
                  if sum(p.rsplit("/", 1)[-1] == name for p in paths) > 1}
        for path in paths:
            folder, _, file = path.rpartition("/")
            candidates = {path} | ({file} if file not in shared else set())
            if file == "__init__.py":
                candidates = {f"{folder}/", f"{folder.rsplit('/', 1)[-1]}/"} if folder else {"__init__.py"}
            if f"{app}/{path}" not in everywhere and not candidates & names:
                missing.append(f"{app}/{path}")
    return missing


def test_docs_architecture_names_every_module():
    missing = unnamed(ARCHITECTURE.read_text(), named_modules())
    assert not missing, (
        "docs/architecture.md names these modules nowhere (name each in its app's section; bin/modules lists "
        "them all):\n" + "\n".join(missing))


def test_a_module_named_nowhere_is_found():
    apps = {"runs": ["__init__.py", "search.py", "store.py", "views/__init__.py", "views/forms.py", "forms.py"],
            "work": ["apps.py", "inbox.py"]}
    doc = ("### In every app\n\n`apps.py`\n\n### `runs/`\n\n| `search.py` | `views/` with `forms.py` |\n\n"
           "### `work/`\n\nNothing.\n\nElsewhere: `runs/store.py`.\n")
    # `forms.py` is the path of runs/forms.py, and names views/forms.py no more than any file of that name;
    # work/inbox.py is named only outside its app's section, and not by its path.
    assert unnamed(doc, apps) == ["runs/views/forms.py", "work/inbox.py"]
