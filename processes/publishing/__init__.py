"""Import, bind and publish PROCESS.md documents (spec §2, §6 rule 5, §7).

The entry points named here each open one transaction; the functions they share across the package
(``store_draft``, ``bind_in_transaction``, ``publish_in_transaction``) assume they run inside one, so
``import_process`` does everything it does atomically.

- ``results.py``: the errors and what each operation answers.
- ``packages.py``: reading a PROCESS.md file, folder or zip, within the size caps.
- ``drafts.py``: a document checked and stored as a draft, and what a draft needs.
- ``binding.py``: roles bound to groups (new groups included).
- ``publish.py``: a bound draft published as an immutable, content-hashed version.
- ``importing.py``: ``import_process``, all of the above in one step (the command line).

Decisions on points the specification leaves open:

- ``import_draft`` stores a draft only for a document the server accepts. A refused document is
  answered with every issue and stores nothing: the importer still holds what they sent (a file, or
  the text the admin's import form shows again), and a draft that can never be published would only
  stand in the way. Nothing is stored either when the import is unchanged (the content hash equals
  the latest published version's). Drafts refused by earlier releases keep their issues and are
  shown, never bound or published.
- Publication parses and validates the draft's source again with today's capabilities, since a
  profile or a tool may have gone away since the import (spec §8: refused "at publication").
- A draft whose content equals the latest version when it is published creates no version; the
  result says ``unchanged`` and the draft points at that version.
- Role bindings live on the draft until publication and are then copied into RoleBindings, which
  never change; a later version is bound afresh (the importer is asked, spec §7).
- A role may be bound to a group created for it, named by the importer: in the admin a name some
  group of the organization already has (in any case) is refused, since the importer meant that
  group and should pick it; the command line binds to such a group instead (``--bind`` creates
  only what is missing).
- A zip holds ``PROCESS.md`` at its root (no folder name to check) or ``<folder>/PROCESS.md``
  (the folder name must equal ``name``). Only that member is decompressed, at most
  ``MAX_PROCESS_BYTES`` of it; any member name that is absolute or climbs out with ``..`` refuses
  the whole archive.
"""

from processes.publishing.binding import bind_roles, check_new_group_names
from processes.publishing.drafts import (
    bound_groups,
    document_text,
    draft_definition,
    draft_roles,
    draft_systems,
    import_draft,
    suggested_bindings,
    unbound_roles,
)
from processes.publishing.importing import import_process
from processes.publishing.packages import read_package, read_upload, read_zip
from processes.publishing.publish import publish_draft
from processes.publishing.results import (
    MAX_ARCHIVE_MEMBERS,
    PROCESS_FILE,
    BindingError,
    ImportOutcome,
    ImportResult,
    PackageError,
    PublicationError,
    PublishError,
    PublishResult,
    draft_line,
)

__all__ = [
    "MAX_ARCHIVE_MEMBERS",
    "PROCESS_FILE",
    "BindingError",
    "ImportOutcome",
    "ImportResult",
    "PackageError",
    "PublicationError",
    "PublishError",
    "PublishResult",
    "bind_roles",
    "bound_groups",
    "check_new_group_names",
    "document_text",
    "draft_definition",
    "draft_line",
    "draft_roles",
    "draft_systems",
    "import_draft",
    "import_process",
    "publish_draft",
    "read_package",
    "read_upload",
    "read_zip",
    "suggested_bindings",
    "unbound_roles",
]
