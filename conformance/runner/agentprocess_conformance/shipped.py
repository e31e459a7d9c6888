"""The runner's data (the official schemas, the fixtures, its probe processes) as a folder on disk.

Installed, that is the package's own `data` folder. Run from the single-file zipapp, the files are inside
the archive, where a publish command cannot read them (it is given a fixture's folder), so they are
copied once into a temporary folder, removed when the runner exits.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


@cache
def data_folder() -> Path:
    data = resources.files(__package__) / "data"
    if isinstance(data, Path):
        return data
    copy = Path(tempfile.mkdtemp(prefix="agentprocess-conformance-"))
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    copy_tree(data, copy)
    return copy


def copy_tree(source: Traversable, target: Path) -> None:
    for entry in source.iterdir():
        if entry.is_dir():
            (target / entry.name).mkdir()
            copy_tree(entry, target / entry.name)
        else:
            (target / entry.name).write_bytes(entry.read_bytes())
