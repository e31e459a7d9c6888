"""The task form keeps what was chosen and says each problem once, by its field: a redrawn form (no script)
says what became of the files chosen, a step whose output declares `summary` shows one Summary, and a value
larger than a run can hold is named with its size in words (spec §2.3, §6 rule 3; limits.runDataBytes)."""

from __future__ import annotations

import re
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from accounts.models import Organization
from processes.models import Draft
from runs.tools import call_tool
from tests.work.conftest import form_fields, open_item
from work.forms import size_words

NOTED = """---
name: noted
description: Notes and a summary, written by the person who starts the run.
inputs:
  title: string
  when: { type: datetime, optional: true }
steps:
  - id: write
    person: initiator
    task: Write the notes and sum them up.
    output:
      notes: string
      summary: string
      details: object
      points: { type: list, items: number, optional: true }
  - id: done
    finish: written
---
"""


@pytest.fixture
def noted(publish, make_person, browser_of):
    """A run of `noted` waiting on its starter; return (client, item page url, person)."""
    publish(NOTED)
    writer = make_person("writer@example.com")
    view = call_tool(writer, "start_run", {"process": "noted", "inputs": {"title": "Q3", "when": "2026-12-04T10:00:00Z"},
                                           "requestId": str(uuid.uuid4())})
    return browser_of(writer), f"/inbox/{open_item(view)['id']}/", writer, view["run"]["id"]


def field_html(html: str, name: str) -> str:
    start = html.index(f'id="field-{name}"')
    return html[start:html.index("</div>", start)]


def issues_list(html: str) -> list[str]:
    box = html[html.index('class="error-summary"'):]
    box = box[:box.index("</div>")]
    return [re.sub(r"<[^>]+>", "", item) for item in re.findall(r"<li>(.*?)</li>", box)]


def test_a_step_whose_output_declares_summary_shows_one_summary(noted):
    client, url, _writer, _run_id = noted
    html = client.get(url).content.decode()
    labels = re.findall(r"<label[^>]*>\s*Summary\s*<", html)
    assert len(labels) == 1, labels
    assert 'name="output-summary"' in html and 'name="summary"' not in html


def test_redrawing_the_form_without_script_says_the_chosen_file_is_kept(noted):
    client, url, _writer, _run_id = noted
    fields = form_fields(client.get(url).content.decode(), "complete")
    redrawn = client.post(url, {**fields, "op": "output-details:add-col", "output-notes": "Kept",
                                "files": SimpleUploadedFile("receipt.pdf", b"%PDF r", content_type="application/pdf")})
    assert redrawn.status_code == 200
    html = redrawn.content.decode()
    # the grid is drawn with its new field, for the page's script to swap in, and the notes are kept
    assert 'id="f-output-details-col-1-name"' in html and ">Kept</textarea>" in html
    assert "receipt.pdf was uploaded and is ticked above: no need to choose it again." in html
    assert re.search(r'name="kept_file" value="f_[0-9a-f]+" checked', html)


@override_settings(MAX_UPLOAD_BYTES=4)
def test_a_file_that_could_not_be_kept_is_to_be_chosen_again(noted):
    client, url, _writer, _run_id = noted
    fields = form_fields(client.get(url).content.decode(), "complete")
    redrawn = client.post(url, {**fields, "op": "output-details:add-col",
                                "files": SimpleUploadedFile("big.pdf", b"%PDF too big", content_type="application/pdf")})
    html = redrawn.content.decode()
    assert redrawn.status_code == 400 and "Choose big.pdf again." in html and 'name="kept_file"' not in html


def test_buttons_that_redraw_the_grid_are_marked_for_the_script(noted):
    client, url, _writer, _run_id = noted
    html = client.get(url).content.decode()
    grid = html[html.index('id="field-output-details"'):]
    assert re.search(r'value="output-details:add-col" formnovalidate data-grid-op', grid)
    assert re.search(r'value="output-details:remove-col:0" formnovalidate data-grid-op', grid)
    assert "onclick" not in html and "onchange" not in html


def complete(client, url, **values):
    fields = form_fields(client.get(url).content.decode(), "complete")
    data = {**fields, "decision": "completed", "output-summary": "Short", "output-details-col": "0",
            "output-details-col-0-name": "k", "output-details-col-0-kind": "text", "output-details-0-0": "v",
            **values}
    return client.post(url, data)


@override_settings(RUN_DATA_BYTES=1024)
def test_a_value_larger_than_a_run_holds_is_named_by_its_field_once(noted):
    # limits.runDataBytes: the page measures the field as the engine measures run data
    client, url, writer, run_id = noted
    response = complete(client, url, **{"output-notes": "x" * 2100})
    assert response.status_code == 422
    html = response.content.decode()
    words = "Notes is 2.1 KB; the most a run can hold is 1 KB"
    assert issues_list(html) == [words]
    assert words in field_html(html, "output-notes")
    assert html.count(words) == 2  # the list of what to fix, and beside the field: nowhere else
    assert "runDataBytes" not in html and "bytes would exceed" not in html
    assert call_tool(writer, "get_run", {"runId": run_id})["data"]["steps"] == {}


@override_settings(RUN_DATA_BYTES=1400)
def test_a_run_too_full_for_a_value_names_the_largest_field(noted):
    client, url, _writer, _run_id = noted
    html = complete(client, url, **{"output-notes": "y" * 1300}).content.decode()
    (issue,) = issues_list(html)
    assert re.fullmatch(r"Notes is 1\.3 KB; with the rest of the run that makes 1\.\d KB, and the most a run can "
                        r"hold is 1\.4 KB", issue), issue
    assert issue in field_html(html, "output-notes") and "runDataBytes" not in html


@override_settings(RUN_DATA_BYTES=1024)
def test_a_start_input_larger_than_a_run_holds_is_named_by_its_field(noted):
    client, _url, _writer, _run_id = noted
    html = client.get("/processes/noted/").content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html.split('<form method="post">')[1]))
    response = client.post("/processes/noted/", {**fields, "inputs-title": "t" * 3000})
    assert response.status_code == 400
    assert "Title is 2.9 KB; the most a run can hold is 1 KB" in response.content.decode()


def test_sizes_read_as_a_person_says_them():
    assert size_words(2097695) == "2.0 MB" and size_words(1048576) == "1 MB"
    assert size_words(1536) == "1.5 KB" and size_words(12) == "12 bytes"


def test_the_inbox_shows_an_input_moment_as_the_item_page_does(noted):
    client, url, writer, _run_id = noted
    inbox = client.get("/inbox/").content.decode()
    shown = '<time datetime="2026-12-04T10:00:00+00:00">4 Dec 2026, 10:00 UTC</time>'
    assert f"When: {shown}" in inbox and "2026-12-04T10:00:00Z" not in inbox
    assert shown in client.get(url).content.decode()
    writer.user.time_zone = "Europe/Berlin"
    writer.user.save(update_fields=["time_zone"])
    assert '<time datetime="2026-12-04T10:00:00+00:00">4 Dec 2026, 11:00 CET</time>' in client.get("/inbox/").content.decode()


@pytest.fixture
def admin_client(make_person, browser_of):
    person = make_person("admin@example.com", operator=True)
    person.user.is_staff = person.user.is_superuser = True
    person.user.save(update_fields=["is_staff", "is_superuser"])
    return browser_of(person)


def test_the_admin_home_and_the_drafts_list_lead_to_the_import(admin_client):
    home = admin_client.get("/admin/").content.decode()
    assert 'href="/admin/processes/draft/import/"' in home and "Import a process (PROCESS.md)" in home
    drafts = admin_client.get("/admin/processes/draft/").content.decode()
    assert "Import PROCESS.md" in drafts
    added = admin_client.get("/admin/processes/draft/add/")
    assert added.status_code == 302 and added["Location"] == "/admin/processes/draft/import/"
    assert not Draft.objects.exists()


def test_the_import_chooses_the_only_organization(admin_client):
    only = Organization.objects.get()
    Organization.objects.filter(pk=only.pk).update(slug="acme")
    form = admin_client.get("/admin/processes/draft/import/").content.decode()
    assert re.search(rf'<option value="{only.pk}" selected>', form)
    Organization.objects.create(slug="other", name="Other")
    form = admin_client.get("/admin/processes/draft/import/").content.decode()
    assert '<option value="" selected>' in form  # two to choose from: the admin chooses


@override_settings(RUN_DATA_BYTES=1024)
def test_a_summary_larger_than_a_run_holds_is_named_beside_it(publish, make_person, browser_of):
    publish(NOTED.replace("      summary: string\n", ""))
    writer = make_person("writer@example.com")
    view = call_tool(writer, "start_run", {"process": "noted", "inputs": {"title": "Q3"}, "requestId": str(uuid.uuid4())})
    client, url = browser_of(writer), f"/inbox/{open_item(view)['id']}/"
    response = client.post(url, {**form_fields(client.get(url).content.decode(), "complete"), "decision": "completed",
                                 "output-notes": "n", "summary": "s" * 1500})
    html = response.content.decode()
    words = "Summary is 1.5 KB; the most a run can hold is 1 KB"
    assert response.status_code == 400 and issues_list(html) == [words] and words in field_html(html, "summary")
    assert call_tool(writer, "get_run", {"runId": view["run"]["id"]})["data"]["steps"] == {}
