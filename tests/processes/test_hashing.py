"""The content hash of spec §6 rule 5: SHA-256 over canonical frontmatter JSON, a newline, the body."""

import hashlib

from processes.hashing import content_hash
from processes.parsing import parse_process

MINIMAL = {"name": "x", "description": "d", "steps": [{"id": "end", "finish": "done"}]}


def test_minimal_vector_computed_by_hand():
    # RFC 8785: keys sorted, no whitespace; then one newline; then the body as written.
    canonical = b'{"description":"d","name":"x","steps":[{"finish":"done","id":"end"}]}'
    body = "# X\n\nBody.\n"
    expected = hashlib.sha256(canonical + b"\n" + body.encode("utf-8")).hexdigest()
    assert expected == "c1c9baa1050a47fb5716362e42b0c53112356ee56cf7052ac1b352d535cbbef8"
    assert content_hash(MINIMAL, body) == expected


def test_vector_with_escapes_numbers_and_non_ascii_keys():
    frontmatter = {
        "name": "x",
        "description": 'Café ✓ "q"\n',
        "inputs": {"ü": "string", "a": {"type": "number", "one_of": [1.0, 0.5, 100, 1e21]}},
        "steps": [{"id": "end", "finish": "done"}],
    }
    # Keys sort by UTF-16 code units ("a" < "ü"), 1.0 is written 1, 1e21 is 1e+21, strings are UTF-8.
    canonical = (
        '{"description":"Café ✓ \\"q\\"\\n",'
        '"inputs":{"a":{"one_of":[1,0.5,100,1e+21],"type":"number"},"ü":"string"},'
        '"name":"x","steps":[{"finish":"done","id":"end"}]}'
    ).encode()
    body = "line\r\n"
    expected = hashlib.sha256(canonical + b"\n" + b"line\r\n").hexdigest()
    assert expected == "6289a9e448cf5d55585c5e744638716d605a4624d771849acc41a6d0733ffcfa"
    assert content_hash(frontmatter, body) == expected


def test_hash_is_lowercase_hex_sha256():
    digest = content_hash(MINIMAL, "")
    assert len(digest) == 64
    assert digest == digest.lower()
    int(digest, 16)


def test_two_yaml_spellings_of_one_frontmatter_hash_the_same():
    block = parse_process("---\nname: x\ndescription: d\nsteps:\n  - id: end\n    finish: done\n---\nBody.\n")
    flow = parse_process(
        "---\nsteps: [{finish: 'done', id: end}]   # comments are not content\ndescription: \"d\"\nname: x\n"
        "---\nBody.\n"
    )
    assert block.issues == flow.issues == []
    assert content_hash(block.frontmatter, block.body) == content_hash(flow.frontmatter, flow.body)
    assert content_hash(block.frontmatter, block.body) == content_hash(MINIMAL, "Body.\n")


def test_key_order_of_the_dict_does_not_matter():
    reordered = {"steps": [{"finish": "done", "id": "end"}], "description": "d", "name": "x"}
    assert content_hash(reordered, "b") == content_hash(MINIMAL, "b")


def test_a_body_change_changes_the_hash():
    assert content_hash(MINIMAL, "Body.\n") != content_hash(MINIMAL, "Body.\r\n")
    assert content_hash(MINIMAL, "Body.\n") != content_hash(MINIMAL, "Body.")
    assert content_hash(MINIMAL, "Body.\n") != content_hash(MINIMAL, "Body!\n")


def test_a_frontmatter_change_changes_the_hash():
    changed = {**MINIMAL, "description": "e"}
    assert content_hash(changed, "") != content_hash(MINIMAL, "")


def test_an_extra_newline_at_the_start_of_the_body_changes_the_hash():
    # The separator is exactly one newline; a blank first body line is part of the body.
    assert content_hash(MINIMAL, "\n") != content_hash(MINIMAL, "")
