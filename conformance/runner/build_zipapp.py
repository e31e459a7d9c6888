"""Build agentprocess-conformance as one file: a zipapp that needs only Python 3.11 or later.

    python conformance/runner/build_zipapp.py [OUTPUT]        (default: dist/agentprocess-conformance.pyz)

The archive holds the runner's package from this folder (with the official schemas and the fixtures) and
its dependencies (pyproject.toml), copied from the Python environment this script runs in, which must have
them installed, as the server's virtualenv has. Only their Python modules are copied, never a compiled
extension: PyYAML's optional libyaml binding stays out (PyYAML then reads YAML in Python), and a
dependency that would need one is refused. The entries are sorted and dated 1980-01-01, so the same
sources and dependencies give the same bytes. Before it is written, the archive is run once with
`python -I -S` (no site-packages at all) to show it needs nothing outside itself.
"""

from __future__ import annotations

import importlib.machinery
import io
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "agentprocess_conformance"
DEFAULT_OUTPUT = Path("dist") / "agentprocess-conformance.pyz"
SHEBANG = b"#!/usr/bin/env python3\n"
MAIN = b'''"""Run agentprocess-conformance from its zipapp."""
import sys

if sys.version_info < (3, 11):
    sys.exit("agentprocess-conformance needs Python 3.11 or later")
from agentprocess_conformance.cli import main

sys.exit(main())
'''
COMPILED = tuple({*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".pyd", ".dylib", ".dll"})
# What a dependency's metadata folder keeps in the archive: its description and its licence.
KEPT_METADATA = re.compile(r"^(METADATA|LICEN[CS]E.*|COPYING.*|NOTICE.*|licenses/.+)$")
DATE = (1980, 1, 1, 0, 0, 0)


def requirement_names() -> list[str]:
    declared = tomllib.loads((HERE / "pyproject.toml").read_text())["project"]["dependencies"]
    return [re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0] for requirement in declared]


def package_files() -> dict[str, bytes]:
    """The runner's own package: its modules and its data, as setuptools installs them."""
    found = {}
    for path in sorted((HERE / PACKAGE).rglob("*")):
        relative = path.relative_to(HERE)
        if path.is_file() and "__pycache__" not in relative.parts and not path.name.endswith(COMPILED):
            found[relative.as_posix()] = path.read_bytes()
    return found


def dependency_files(name: str) -> dict[str, bytes]:
    """A distribution's modules and its metadata's description and licence, read where it is installed."""
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"{name} is not installed in {sys.prefix}: install the runner's dependencies first") from None
    found, compiled = {}, []
    for file in distribution.files or []:
        parts = file.parts
        if parts[0] == ".." or "__pycache__" in parts:
            continue  # scripts installed beside the interpreter, and bytecode
        if parts[0].endswith(".dist-info"):
            if KEPT_METADATA.match("/".join(parts[1:])):
                found[file.as_posix()] = Path(file.locate()).read_bytes()
            continue
        if file.name.endswith(COMPILED):
            compiled.append(file.as_posix())
            continue
        found[file.as_posix()] = Path(file.locate()).read_bytes()
    modules = [path for path in found if path.endswith(".py")]
    if not modules:
        raise SystemExit(f"{name}: no Python module to copy (only {', '.join(compiled) or 'nothing'})")
    return found


def archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    buffer.write(SHEBANG)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as bundle:
        for name in sorted(files):
            entry = zipfile.ZipInfo(name, date_time=DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(entry, files[name])
    return buffer.getvalue()


def self_check(content: bytes) -> None:
    """Run the archive with no site-packages at all: it lists its checks and exports its fixtures."""
    with tempfile.TemporaryDirectory() as folder:
        trial = Path(folder) / "trial.pyz"
        trial.write_bytes(content)
        for arguments in (["--list"], ["--export", str(Path(folder) / "fixtures")]):
            done = subprocess.run([sys.executable, "-I", "-S", str(trial), *arguments], capture_output=True,
                                  text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the archive does not run on its own ({' '.join(arguments)}):\n{done.stderr[-3000:]}")


def build(output: Path) -> list[str]:
    """Write the zipapp to output; return the dependencies it carries, each with its version."""
    files = {"__main__.py": MAIN, **package_files()}
    carried = []
    for name in requirement_names():
        files.update(dependency_files(name))
        carried.append(f"{name} {metadata.version(name)}")
    content = archive(files)
    self_check(content)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(content)
    output.chmod(0o755)
    return carried


def main(argv: list[str]) -> int:
    output = Path(argv[0]) if argv else DEFAULT_OUTPUT
    carried = build(output)
    print(f"{output}: agentprocess-conformance with {', '.join(carried)}; run it with python3 {output} --help")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
