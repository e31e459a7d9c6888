"""The people pages: home, the inbox, a work item, a run, the runs list and the search page. Each view
validates its input, calls runs/ (through a tool where the agents have the same one: get_run, decide,
cancel, upload) or work's read models (inbox.py, runlist.py, search.py), and renders.

- ``common.py``: what every page shares: the person and operator decorators, refusals, request ids.
- ``inbox_pages.py``: home, the inbox and its notices, people suggestions.
- ``item_pages.py``: a work item: taking, letting go, its decision forms and deciding.
- ``run_pages.py``: a run, cancelling it, the runs list and the search page.

The pages are one more door onto the engine (docs/architecture.md): a decision here is
`call_tool(identity, "decide", …)` exactly as over REST, so every rule and check order is the engine's,
not the page's.
"""

from work.views.common import new_request_id, operator_page, person_page, refused, request_id
from work.views.inbox_pages import home, inbox_page, mark_notices_read, people_suggest
from work.views.item_pages import item_or_404, item_page, item_response, release_item, take_item
from work.views.run_pages import cancel_run, run_page, run_response, runs_page, search_page

__all__ = [
    "cancel_run",
    "home",
    "inbox_page",
    "item_or_404",
    "item_page",
    "item_response",
    "mark_notices_read",
    "new_request_id",
    "operator_page",
    "people_suggest",
    "person_page",
    "refused",
    "release_item",
    "request_id",
    "run_page",
    "run_response",
    "runs_page",
    "search_page",
    "take_item",
]
