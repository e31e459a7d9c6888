"""Reading a PROCESS.md from a file, a folder or a zip (spec §2), within MAX_PROCESS_BYTES and the archive caps."""

import os
import stat
import zipfile
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import Literal

from django.conf import settings

from processes.publishing.results import MAX_ARCHIVE_MEMBERS, PROCESS_FILE, PackageError


def max_process_bytes() -> int:
    return int(getattr(settings, "MAX_PROCESS_BYTES", 1024 * 1024))


def _max_archive_bytes() -> int:
    # A zip may carry more than PROCESS.md (profiles add files), so the archive gets the upload cap.
    return max(int(getattr(settings, "MAX_UPLOAD_BYTES", 10 * 1024 * 1024)), max_process_bytes())


def read_package(path: str | os.PathLike) -> tuple[bytes, str | None]:
    """Read a PROCESS.md file, a folder holding one, or a zip of such a folder, as (bytes, folder name)."""
    where = os.fspath(path)
    try:
        info = os.stat(where)
    except FileNotFoundError:
        raise PackageError([f"{where}: no such file or folder"]) from None
    except OSError as exc:
        raise PackageError([f"{where}: cannot be read ({exc.strerror})"]) from None
    if stat.S_ISDIR(info.st_mode):
        # abspath, not resolve: the folder is named as the importer named it, symlink or not.
        folder_name = Path(os.path.abspath(where)).name
        return _read_file(os.path.join(where, PROCESS_FILE), max_process_bytes()), folder_name
    if where.lower().endswith(".zip"):
        return read_zip(_read_file(where, _max_archive_bytes(), what="archive"), where=where)
    data = _read_file(where, max_process_bytes())
    if _looks_like_zip(data):
        return read_zip(data, where=where)
    return data, None


def read_upload(data: bytes, *, filename: str = "") -> tuple[bytes, str | None]:
    """Read an uploaded PROCESS.md or zipped folder, as (bytes, folder name)."""
    where = filename or "upload"
    if filename.lower().endswith(".zip") or _looks_like_zip(data):
        if len(data) > _max_archive_bytes():
            raise PackageError([f"{where}: archive is larger than the limit of {_max_archive_bytes()} bytes"])
        return read_zip(data, where=where)
    if len(data) > max_process_bytes():
        raise PackageError([f"{where}: is larger than the limit of {max_process_bytes()} bytes"])
    return data, None


def read_zip(data: bytes, *, where: str = "archive") -> tuple[bytes, str | None]:
    """Find the one PROCESS.md in a zip and return (its bytes, its folder name or None)."""
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise PackageError([f"{where}: is not a readable zip archive"]) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ARCHIVE_MEMBERS:
            raise PackageError([f"{where}: holds more than {MAX_ARCHIVE_MEMBERS} files"])
        issues = [
            f"{where}: member {m.filename!r} {why}" for m in members if (why := _unsafe_member(m.filename))
        ]
        if issues:
            raise PackageError(issues)
        candidates = [m for m in members if not m.is_dir() and _candidate_folder(m.filename) is not False]
        if not candidates:
            raise PackageError([f"{where}: holds no {PROCESS_FILE} at its root or in one top folder"])
        if len(candidates) > 1:
            names = ", ".join(m.filename for m in candidates)
            raise PackageError([f"{where}: holds more than one {PROCESS_FILE} ({names}); zip one folder"])
        member = candidates[0]
        limit = max_process_bytes()
        # The declared size can lie, so the read itself is bounded too (a zip bomb stops here).
        if member.file_size > limit:
            raise PackageError([f"{where}: {member.filename} is larger than the limit of {limit} bytes"])
        try:
            with archive.open(member) as handle:
                content = handle.read(limit + 1)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError) as exc:
            raise PackageError([f"{where}: {member.filename} cannot be decompressed ({exc})"]) from None
        if len(content) > limit:
            raise PackageError([f"{where}: {member.filename} is larger than the limit of {limit} bytes"])
        folder = _candidate_folder(member.filename)
        return content, folder or None


def _looks_like_zip(data: bytes) -> bool:
    # A PROCESS.md starts with "---", so a leading "PK" can only be an archive.
    return data[:2] == b"PK"


def _read_file(path: str, limit: int, *, what: str = "file") -> bytes:
    """Read at most ``limit`` bytes of a regular file, refusing a larger one."""
    try:
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise PackageError([f"{path}: is not a regular file"])
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise PackageError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise PackageError([f"{path}: is a folder, not a file"]) from None
    except OSError as exc:
        raise PackageError([f"{path}: cannot be read ({exc.strerror})"]) from None
    if len(data) > limit:
        raise PackageError([f"{path}: {what} is larger than the limit of {limit} bytes"])
    return data


def _unsafe_member(name: str) -> str | None:
    """Say why a zip member name could escape its folder, or None when it cannot."""
    if "\\" in name:
        return "uses a backslash, which some tools treat as a folder separator"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the archive with '..' (path traversal)"
    if "\x00" in name:
        return "contains a NUL character"
    return None


def _candidate_folder(name: str) -> str | Literal[False]:
    """Return '' for a root PROCESS.md, the folder for <folder>/PROCESS.md, False otherwise."""
    parts = PurePosixPath(name).parts
    if parts == (PROCESS_FILE,):
        return ""
    if len(parts) == 2 and parts[1] == PROCESS_FILE and parts[0] != "__MACOSX":
        return parts[0]
    return False
