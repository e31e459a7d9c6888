"""What publishing answers: the errors that carry every issue, the results of import, publish and the
one-step import, and the line that sums up a draft; and the names the package shares (PROCESS_FILE, the
archive's member cap)."""

from dataclasses import dataclass, field
from typing import Literal

from processes.models import Draft, ProcessVersion

PROCESS_FILE = "PROCESS.md"
MAX_ARCHIVE_MEMBERS = 1000


class PublicationError(Exception):
    """Carry every issue that stopped an operation, one string each."""

    def __init__(self, issues: list[str]):
        self.issues = list(issues)
        super().__init__("; ".join(self.issues))


class PackageError(PublicationError):
    """Raised when a path, folder or zip cannot be read as a process package."""


class BindingError(PublicationError):
    """Raised when role bindings name unknown roles or groups of another organization."""


class PublishError(PublicationError):
    """Raised when a draft cannot be published: it has issues, or roles are unbound."""


@dataclass(frozen=True)
class ImportResult:
    """What one import produced: refused issues, an unchanged version, or a draft to bind."""

    name: str
    issues: list[str] = field(default_factory=list)
    draft: Draft | None = None
    unchanged: ProcessVersion | None = None
    roles: list[str] = field(default_factory=list)
    unbound_roles: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    sha256: str | None = None

    @property
    def refused(self) -> bool:
        return bool(self.issues)


@dataclass(frozen=True)
class PublishResult:
    """The version a publication created, or the latest one when the content was unchanged."""

    version: ProcessVersion
    unchanged: bool = False


Status = Literal["refused", "unchanged", "draft", "published"]


@dataclass(frozen=True)
class ImportOutcome:
    """The end state of ``import_process``; ``lines()`` is what the command prints."""

    status: Status
    name: str
    issues: list[str] = field(default_factory=list)
    draft: Draft | None = None
    version: ProcessVersion | None = None
    roles: list[str] = field(default_factory=list)
    unbound_roles: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Return one line per issue when refused, otherwise the single summary line."""
        if self.status == "refused":
            return list(self.issues)
        if self.status == "published":
            assert self.version is not None
            return [f"published {self.name} version {self.version.number} sha256 {self.version.sha256}"]
        if self.status == "unchanged":
            assert self.version is not None
            return [f"unchanged {self.name} version {self.version.number} sha256 {self.version.sha256}"]
        return [draft_line(self.name, self.unbound_roles, self.systems)]


def draft_line(name: str, unbound_roles: list[str], systems: list[str]) -> str:
    """Word the one line that describes a draft still to be bound or published."""
    line = f"draft {name}: " + (
        f"roles to bind: {', '.join(unbound_roles)}" if unbound_roles else "ready to publish"
    )
    if systems:
        line += f"; requires systems: {', '.join(systems)}"
    return line
