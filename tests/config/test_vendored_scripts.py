"""The vendored browser scripts are exactly what bin/vendor fetched and recorded (static/vendor/README.md)."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDOR_SCRIPT = runpy.run_path(str(ROOT / "bin" / "vendor"), run_name="vendor")


def test_the_vendored_files_and_their_readme_match_the_pins():
    # The README is what bin/vendor writes for the pinned versions and the files on disk: an edited file,
    # a changed pin without a fetch, or a hand-edited README all show here, without the network.
    vendor = VENDOR_SCRIPT["VENDOR"]
    rows = [(pin, {target: (vendor / pin["name"] / target).read_bytes() for target in pin["files"].values()})
            for pin in VENDOR_SCRIPT["PINS"]]
    assert (vendor / "README.md").read_text() == VENDOR_SCRIPT["readme"](rows)


def test_each_package_ships_its_licence():
    vendor = VENDOR_SCRIPT["VENDOR"]
    for pin in VENDOR_SCRIPT["PINS"]:
        assert "LICENSE" in pin["files"].values()
        assert (vendor / pin["name"] / "LICENSE").stat().st_size > 500
