"""Split a PROCESS.md into frontmatter and body, and read the frontmatter as YAML 1.2 (core schema).

The YAML is read from PyYAML's event stream (its reader, scanner and parser) by a small builder of
our own, so that PyYAML's YAML 1.1 resolvers, its recursive composer and its constructors never
run. The builder resolves plain scalars with the YAML 1.2 core schema, refuses what a process
document has no use for (anchors, aliases, tags outside the core, non-string or duplicate keys,
non-finite numbers) and bounds the work: the document size is checked before YAML reading starts,
and depth and node count are checked on every event, so a bomb is refused as soon as it shows.

Decisions on points the specification leaves open:

- A byte order mark is refused: the document must start with the bytes ``---``.
- ``<<`` is an ordinary string key, because the core schema has no merge keys; validation then
  refuses it as an unknown field.
- ``017`` is the decimal integer 17 and ``0o17`` is the octal integer 15, as the core schema says.
- Line numbers in issues count lines of the whole document, so line 1 is the opening ``---``.
"""

import codecs
import math
import re
from dataclasses import dataclass

import yaml
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.scanner import Scanner

from processes.wording import kind as _kind
from processes.wording import show as _show

MAX_DOCUMENT_BYTES = 1_048_576
MAX_DEPTH = 32
MAX_NODES = 50_000

DELIMITER = "---"

_CORE = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL, _MAP, _SEQ = (
    _CORE + name for name in ("str", "int", "float", "bool", "null", "map", "seq")
)
_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL})

# The YAML 1.2 core schema, tag resolution for plain scalars (YAML 1.2.2 §10.3.2).
_NULL_RE = re.compile(r"null|Null|NULL|~|")
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_INT_DECIMAL_RE = re.compile(r"[-+]?[0-9]+")
_INT_OCTAL_RE = re.compile(r"0o[0-7]+")
_INT_HEX_RE = re.compile(r"0x[0-9a-fA-F]+")
_INT_FORMS = ((_INT_DECIMAL_RE, 0, 10), (_INT_OCTAL_RE, 2, 8), (_INT_HEX_RE, 2, 16))
_MAX_INT_CHARS = 100
_FLOAT_RE = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF_RE = re.compile(r"[-+]?(\.inf|\.Inf|\.INF)")
_NAN_RE = re.compile(r"\.nan|\.NaN|\.NAN")



@dataclass(frozen=True)
class ParseResult:
    """The frontmatter (None when it could not be read), the body, and every problem found."""

    frontmatter: dict | None
    body: str
    issues: list[str]


class _Refused(Exception):
    """Stop reading the frontmatter because going on would be unsafe or pointless."""


class _Invalid:
    """Stand in for a scalar that was refused, so it is neither stored nor reported twice."""


_INVALID = _Invalid()
_EXPECT_KEY = object()
_SKIP_VALUE = object()


class _EventLoader(Reader, Scanner, Parser):
    """Turn YAML text into PyYAML events and nothing more."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


class _Frame:
    """Hold a mapping or sequence while its children arrive."""

    __slots__ = ("key", "line", "value")

    def __init__(self, value: dict | list, line: int) -> None:
        self.value = value
        self.line = line
        self.key = _EXPECT_KEY


def parse_process(text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> ParseResult:
    """Split and read a PROCESS.md, turning every problem into an issue instead of an exception."""
    try:
        return _parse(text, max_bytes)
    except Exception as exc:
        # The contract is that nothing escapes; a bug here must still come back as an issue.
        return ParseResult(None, "", [f"document: could not be read ({type(exc).__name__})"])


def _parse(text: object, max_bytes: int) -> ParseResult:
    """Decode, split and read the document."""
    decoded, issue = _decode(text, max_bytes)
    if issue:
        return ParseResult(None, "", [issue])
    assert decoded is not None
    yaml_text, body, issue = _split(decoded)
    if issue:
        return ParseResult(None, body, [issue])
    frontmatter, issues = _load_frontmatter(yaml_text)
    return ParseResult(None if issues else frontmatter, body, issues)


def _decode(text: object, max_bytes: int) -> tuple[str | None, str | None]:
    """Return the document as text, or an issue when it is too large or not UTF-8 text."""
    if isinstance(text, bytes | bytearray | memoryview):
        data = bytes(text)
        if len(data) > max_bytes:
            return None, _too_large(len(data), max_bytes)
        if data.startswith(codecs.BOM_UTF8):
            return None, _BOM_ISSUE
        try:
            return data.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            return None, f"document: byte {exc.start} is not valid UTF-8; save the file as UTF-8"
    if not isinstance(text, str):
        return None, f"document: must be text or bytes, not {type(text).__name__}"
    # Every character takes at least one byte, so a long text is refused before it is encoded.
    if len(text) > max_bytes:
        return None, _too_large(len(text), max_bytes)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return None, f"document: character {exc.start} is a lone surrogate, which is not valid Unicode"
    if size > max_bytes:
        return None, _too_large(size, max_bytes)
    if text.startswith("\ufeff"):
        return None, _BOM_ISSUE
    return text, None


_BOM_ISSUE = "document: starts with a byte order mark; save it as UTF-8 without one so it starts with '---'"


def _too_large(size: int, max_bytes: int) -> str:
    """Word the size refusal."""
    return f"document: is larger than the limit of {max_bytes} bytes (at least {size})"


def _split(text: str) -> tuple[str, str, str | None]:
    """Return the frontmatter text, the body, and an issue when the delimiters are wrong."""
    if not text:
        return "", "", "document: is empty; a PROCESS.md starts with a line '---'"
    first_end = text.find("\n")
    first_line = text if first_end < 0 else text[:first_end]
    if first_line.removesuffix("\r") != DELIMITER:
        return "", "", "document: line 1: must be exactly '---', which opens the frontmatter"
    if first_end < 0:
        return "", "", "document: the frontmatter opened on line 1 is never closed by a line '---'"
    start = first_end + 1
    position = start
    while position <= len(text):
        line_end = text.find("\n", position)
        line = text[position:] if line_end < 0 else text[position:line_end]
        if line.removesuffix("\r") == DELIMITER:
            body = "" if line_end < 0 else text[line_end + 1 :]
            return text[start:position], body, None
        if line_end < 0:
            break
        position = line_end + 1
    return "", "", "document: the frontmatter opened on line 1 is never closed by a line '---'"


def _load_frontmatter(yaml_text: str) -> tuple[dict | None, list[str]]:
    """Read the frontmatter YAML into plain data, or report why it cannot be."""
    issues: list[str] = []
    try:
        root = _build(yaml_text, issues)
    except _Refused as exc:
        issues.append(str(exc))
        return None, issues
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "is not valid YAML"
        where = _where(mark.line) if mark is not None else "frontmatter"
        issues.append(f"{where}: {problem}")
        return None, issues
    except ReaderError as exc:
        line = yaml_text.count("\n", 0, max(exc.position, 0))
        code = ord(exc.character) if isinstance(exc.character, str) else exc.character
        issues.append(f"{_where(line)}: the character U+{code:04X} is not allowed in YAML")
        return None, issues
    except yaml.YAMLError as exc:
        issues.append(f"frontmatter: is not valid YAML ({exc})")
        return None, issues
    if root is None:
        issues.append("frontmatter: is empty; it must be a mapping with name, description and steps")
        return None, issues
    if not isinstance(root, dict):
        issues.append(f"frontmatter: must be a mapping with name, description and steps, not {_kind(root)}")
        return None, issues
    return root, issues


def _where(line: int) -> str:
    """Name a frontmatter line by its line number in the whole document."""
    # The YAML text starts on document line 2, and PyYAML counts from 0.
    return f"frontmatter: line {line + 2}"


def _build(yaml_text: str, issues: list[str]) -> object:
    """Consume the event stream and build dicts, lists and scalars without recursion."""
    loader = _EventLoader(yaml_text)
    stack: list[_Frame] = []
    root: object = None
    nodes = 0
    documents = 0
    try:
        while True:
            event = loader.get_event()
            if isinstance(event, StreamEndEvent):
                return root
            if isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _Refused(f"{_where(event.start_mark.line)}: holds a second YAML document")
                if event.version is not None and event.version != (1, 2):
                    major, minor = event.version
                    issues.append(
                        f"{_where(event.start_mark.line)}: declares YAML {major}.{minor}; only 1.2 is read"
                    )
                continue
            if isinstance(event, AliasEvent):
                raise _Refused(f"{_where(event.start_mark.line)}: aliases (*{event.anchor}) are not allowed")
            if isinstance(event, MappingEndEvent | SequenceEndEvent):
                frame = stack.pop()
                root = _attach(stack, frame.value, frame.line, issues, root)
                continue
            if not isinstance(event, ScalarEvent | CollectionStartEvent):
                continue
            line = event.start_mark.line
            nodes += 1
            if nodes > MAX_NODES:
                raise _Refused(f"{_where(line)}: the frontmatter has more than {MAX_NODES} values")
            if event.anchor is not None:
                raise _Refused(f"{_where(line)}: anchors (&{event.anchor}) are not allowed")
            if isinstance(event, ScalarEvent):
                root = _attach(stack, _scalar(event, issues), line, issues, root)
                continue
            if len(stack) >= MAX_DEPTH:
                raise _Refused(f"{_where(line)}: nested deeper than {MAX_DEPTH} levels")
            is_mapping = isinstance(event, MappingStartEvent)
            _check_collection_tag(event, is_mapping, issues)
            stack.append(_Frame({} if is_mapping else [], line))
    finally:
        loader.dispose()


def _attach(stack: list[_Frame], value: object, line: int, issues: list[str], root: object) -> object:
    """Put a finished value into its parent, returning the new root."""
    if not stack:
        return value
    parent = stack[-1]
    if isinstance(parent.value, list):
        parent.value.append(value)
        return root
    if parent.key is _EXPECT_KEY:
        issue = _key_issue(value, parent.value)
        if issue:
            issues.append(f"{_where(line)}: {issue}")
        parent.key = _SKIP_VALUE if issue or value is _INVALID else value
        return root
    if parent.key is not _SKIP_VALUE:
        parent.value[parent.key] = value
    parent.key = _EXPECT_KEY
    return root


def _key_issue(key: object, mapping: dict) -> str | None:
    """Say what is wrong with a mapping key, if anything."""
    if key is _INVALID or (isinstance(key, str) and key not in mapping):
        return None
    if isinstance(key, str):
        return f"duplicate key {_show(key)}"
    if isinstance(key, dict | list):
        return f"a mapping key must be a string, not {_kind(key)}"
    return f"mapping key {_show(key)} is not a string; quote it"


def _check_collection_tag(event: CollectionStartEvent, is_mapping: bool, issues: list[str]) -> None:
    """Refuse an explicit tag on a mapping or sequence unless it is the matching core one."""
    tag = event.tag
    if tag is None or tag == "!":
        return
    expected = _MAP if is_mapping else _SEQ
    if tag != expected:
        what = "a mapping" if is_mapping else "a sequence"
        issues.append(f"{_where(event.start_mark.line)}: tag {_show_tag(tag)} is not allowed on {what}")


def _scalar(event: ScalarEvent, issues: list[str]) -> object:
    """Resolve one scalar with the core schema, or report it and return the invalid marker."""
    tag, value, where = event.tag, event.value, _where(event.start_mark.line)
    if tag is None and event.style is None:
        return _resolve_plain(value, where, issues)
    if tag is None or tag == "!" or tag == _STR:
        return value
    if tag not in _SCALAR_TAGS:
        issues.append(
            f"{where}: tag {_show_tag(tag)} is not allowed; only !!str, !!int, !!float, !!bool, !!null, "
            "!!map and !!seq are"
        )
        return _INVALID
    resolved = _resolve_plain(value, where, issues)
    if resolved is _INVALID:
        return _INVALID
    if tag == _FLOAT and isinstance(resolved, int) and not isinstance(resolved, bool):
        return _finite(float(resolved), value, where, issues)
    expected = {_INT: int, _FLOAT: float, _BOOL: bool, _NULL: type(None)}[tag]
    if type(resolved) is not expected:
        issues.append(f"{where}: {_show(value)} is not a valid {_show_tag(tag)} value")
        return _INVALID
    return resolved


def _resolve_plain(value: str, where: str, issues: list[str]) -> object:
    """Give a plain scalar its core-schema type."""
    if _NULL_RE.fullmatch(value):
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    for pattern, prefix, base in _INT_FORMS:
        if pattern.fullmatch(value):
            # Python will neither convert nor print integers of thousands of digits; no process needs them.
            if len(value) > _MAX_INT_CHARS:
                issues.append(f"{where}: the number {_show(value)} has too many digits")
                return _INVALID
            return int(value[prefix:], base)
    if _FLOAT_RE.fullmatch(value):
        return _finite(float(value), value, where, issues)
    if _INF_RE.fullmatch(value) or _NAN_RE.fullmatch(value):
        issues.append(
            f"{where}: {_show(value)} is not a finite number and cannot be hashed; quote it for text"
        )
        return _INVALID
    return value


def _finite(number: float, text: str, where: str, issues: list[str]) -> object:
    """Refuse a float that overflowed to infinity, since canonical JSON cannot hold it."""
    if math.isfinite(number):
        return number
    issues.append(f"{where}: {_show(text)} is too large to be a finite number; quote it for text")
    return _INVALID


def _show_tag(tag: str) -> str:
    """Spell a tag the way it is usually written."""
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


