"""Runs found by words: each run's search document, kept with the run, and the look-up over it.

A run's document holds the words of its process's title (as the catalogue shows it), of every input
value at any depth, and of the outputs of its completed steps. A word of a search finds a run when it
is the start of one of those words (`Okaf` finds "Zanele Okafor"); every word of a search must.

On PostgreSQL the document's tsvector (`words`, a generated column, migration 0012) is looked up with
`to_tsquery('simple', 'okaf:*')` through the GIN index run_search_words; the planner may instead walk
run_search_newest and test each row, for a word so common the newest runs hold it. On SQLite a LIKE
per word over the document, each word of which follows a space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection

from base import backend, sql
from processes.wording import step_title

from .models import RunSearch

MAX_WORDS = 8  # of one search; the rest are not looked for
MAX_DOCUMENT = 200_000  # characters of one run's document: the words after are not indexed
SHOWN = 60  # characters of a matched value shown
_WORD = re.compile(r"[^\W_]+")


def words_of(text: str) -> list[str]:
    """The words of a text as the document and a search see them: letters and digits, lowercased."""
    return _WORD.findall(text.lower())


def search_words(text: str) -> list[str]:
    """The distinct words a search looks for, at most MAX_WORDS, in the order written."""
    return list(dict.fromkeys(words_of(text)))[:MAX_WORDS]


@dataclass(frozen=True)
class Place:
    """One place in a run a search may match: where it is (`input customer`) and the text there."""

    where: str
    text: str

    def words(self) -> list[str]:
        return words_of(self.text)

    def shown(self) -> str:
        text = self.text if len(self.text) <= SHOWN else self.text[: SHOWN - 1] + "…"
        return f"{self.where}: {text}"


def _values(value, path: str):
    """(path, text) of every string and number at any depth of a value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _values(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for inner in value:
            yield from _values(inner, path)
    elif isinstance(value, str):
        yield path, value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, str(value)


def places(process_name: str, data: dict) -> list[Place]:
    """Every place in a run a search looks: the process title, each input value, each completed step's outputs."""
    found = [Place("process title", step_title(process_name))]
    data = data or {}
    found += [Place(f"input {path}", text) for path, text in _values(data.get("inputs") or {}, "")]
    for step_id, record in (data.get("steps") or {}).items():
        output = (record or {}).get("output") if isinstance(record, dict) else None
        if output is None:
            continue
        title = f"output of {step_title(step_id)}"
        found += [Place(f"{title}, {path}" if path else title, text) for path, text in _values(output, "")]
    return found


def _texts(value):
    """The text of every string and number at any depth of a value: `_values` without the paths."""
    if isinstance(value, dict):
        for inner in value.values():
            yield from _texts(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _texts(inner)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


def document_of(process_name: str, data: dict) -> str:
    """A run's search document: its places' distinct words (`places`, in their order), lowercased, each
    after a space. The texts are read without their paths, and their words found in one pass."""
    data = data or {}
    texts = [step_title(process_name), *_texts(data.get("inputs") or {})]
    for record in (data.get("steps") or {}).values():
        output = record.get("output") if isinstance(record, dict) else None
        if output is not None:
            texts.extend(_texts(output))
    # A line break is no letter or digit: no word runs from one text into the next.
    document = "".join(f" {word}" for word in dict.fromkeys(words_of("\n".join(texts))))
    return document[:MAX_DOCUMENT]


def matched(process_name: str, data: dict, words: list[str]) -> list[str]:
    """Where in a run the search's words are: each place holding the start of one of them, as people read it."""
    shown = []
    for place in places(process_name, data):
        held = place.words()
        if any(word.startswith(wanted) for wanted in words for word in held):
            shown.append(place.shown())
    return shown


# --- kept with the run ----------------------------------------------------------------------------


def keep_document(run, *, started: bool, loaded_data) -> None:
    """Write a run's document with the run's write: inserted as it starts, replaced when what its words
    come from may have changed (`words_moved`).

    Called from runs.effects.record; the statements join the write's batch. `loaded_data` is the run's data
    as the write loaded it (run data is only ever replaced, so an unchanged run holds the same object).
    """
    if started:
        sql.insert_later(backend.created(
            RunSearch, run_id=run.pk, organization_id=run.organization_id, started_at=run.started_at,
            document=document_of(run.process_name, run.data),
        ))
        return
    if not words_moved(run.data, loaded_data):
        return
    # What its words come from changed (an output came, an input was corrected): written as it is now.
    sql.update(RunSearch, run.pk, {"document": document_of(run.process_name, run.data)})


def words_moved(data, loaded) -> bool:
    """Whether what a run's document holds words of (`places`: its inputs and its steps' outputs) may
    differ between its data as loaded and as written. A write replaces each document it changes and
    keeps the rest as they were (runs.models.RUN_REPLACED, runs.engine.with_record), so what is the
    object loaded is unchanged, and anything else is taken as changed: at worst an equal output given
    again writes the same document again."""
    if data is loaded:
        return False
    data, loaded = data or {}, loaded or {}
    if data.get("inputs") is not loaded.get("inputs"):
        return True
    steps, before = data.get("steps") or {}, loaded.get("steps") or {}
    return any(_output(steps.get(step_id)) is not _output(before.get(step_id)) for step_id in {*steps, *before})


def _output(record):
    return record.get("output") if isinstance(record, dict) else None


def document_row(run) -> RunSearch:
    """A run's document row, for runs made without the engine (a backfill, a benchmark's bulk load)."""
    return RunSearch(run_id=run.pk, organization_id=run.organization_id, started_at=run.started_at,
                     document=document_of(run.process_name, run.data))


# --- the look-up ----------------------------------------------------------------------------------


def words_query(organization_id: int, words: list[str], limit: int) -> tuple[str, list]:
    """The SELECT of the keys of the organization's newest runs whose document holds the start of every word."""
    table = backend.quote_name(RunSearch._meta.db_table)
    order = f"ORDER BY started_at DESC, run_id DESC LIMIT {int(limit)}"
    if connection.vendor == "postgresql":
        # Each word is letters and digits only (words_of), so `word:*` is a tsquery prefix term as it is.
        tsquery = " & ".join(f"{word}:*" for word in words)
        return (f"SELECT run_id FROM {table} WHERE organization_id = %s"
                f" AND words @@ to_tsquery('simple', %s) {order}", [organization_id, tsquery])
    likes = " AND ".join(["document LIKE %s"] * len(words))
    return (f"SELECT run_id FROM {table} WHERE organization_id = %s AND {likes} {order}",
            [organization_id, *(f"% {word}%" for word in words)])


def runs_with_words(organization_id: int, words: list[str], *, limit: int) -> list[int]:
    """The keys of the organization's newest runs (at most `limit`) holding the start of every word, newest first."""
    if not words:
        return []
    statement, params = words_query(organization_id, words, limit)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return [pk for (pk,) in cursor.fetchall()]
