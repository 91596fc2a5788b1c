"""Structured output checks: a user's schema read with its faults named, a reply checked and indented."""

from __future__ import annotations

import pytest

from strata_gui.core.base.errors import ChatError
from strata_gui.core.runtime.structured import MAX_PROBLEMS, check_json, load_schema

SCHEMA = load_schema("""{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "items": {"type": "array", "items": {"type": "object", "properties": {"price": {"type": "number", "minimum": 0}}}},
    "when": {"type": "string", "format": "date"}
  },
  "required": ["name", "items"],
  "additionalProperties": false
}""")


def test_a_valid_reply_is_parsed_and_indented() -> None:
    check = check_json('{"name": "a", "items": [{"price": 1.5}], "when": "2025-01-02"}', SCHEMA)
    assert check.ok and check.value["items"][0]["price"] == 1.5
    assert check.pretty == ('{\n  "name": "a",\n  "items": [\n    {\n      "price": 1.5\n    }\n  ],\n'
                            '  "when": "2025-01-02"\n}')
    assert check.summary() == "The reply is valid JSON and follows the schema."


def test_every_place_that_does_not_match_is_listed_with_its_path() -> None:
    check = check_json('{"items": [{"price": 2}, {"price": -1}, {"price": "x"}], "extra": 1, "when": "soon"}', SCHEMA)
    assert not check.ok and check.value is not None  # still shown pretty: the user can read what came
    assert check.problems == (
        "$: 'name' is a required property",
        "$: Additional properties are not allowed ('extra' was unexpected)",
        "$.items[1].price: -1 is less than the minimum of 0",
        "$.items[2].price: 'x' is not of type 'number'",
        "$.when: 'soon' is not a 'date'",
    )
    assert check.summary().startswith("The reply does not match:\n• $: 'name' is a required property")


def test_a_cut_reply_and_plain_text_say_why_they_are_not_json() -> None:
    cut = check_json('{"name": "a", "items": [')
    assert cut.problems == ("The reply ends before its JSON does (cut short?)",) and cut.value is None
    assert cut.pretty == '{"name": "a", "items": ['
    for unfinished in ('{"name": "a long na', '{"ok": tr', '{"n": 1.', '{"n": -', '{"name"'):
        assert check_json(unfinished).problems == ("The reply ends before its JSON does (cut short?)",), unfinished
    assert check_json('{"n": 1 2}').problems == ("Not valid JSON at line 1, column 9: Expecting ',' delimiter",)
    assert check_json('{"n": 1} and more').problems == ("Not valid JSON at line 1, column 10: Extra data",)
    prose = check_json("Sure! Here is the JSON you asked for")
    assert prose.problems == ("Not valid JSON at line 1, column 1: Expecting value",)
    assert check_json("").problems == ("Not valid JSON at line 1, column 1: Expecting value",)


def test_a_fenced_block_is_read_as_its_content() -> None:
    check = check_json('```json\n{"name": "a", "items": []}\n```', SCHEMA)
    assert check.ok and check.value == {"name": "a", "items": []}


def test_a_reply_wrong_everywhere_lists_a_bounded_number_of_places() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    check = check_json("[" + ", ".join(['"x"'] * (MAX_PROBLEMS + 5)) + "]", schema)
    assert len(check.problems) == MAX_PROBLEMS + 1 and check.problems[-1] == "… and 5 more"


@pytest.mark.parametrize(("text", "message"), [
    ("{type: object}", "The schema is not valid JSON"),
    ("[1, 2]", "The schema must be a JSON object"),
    ('{"type": "object", "properties": {"a": {"type": "integr"}}}', r"The schema is not valid: \$.properties.a.type"),
    ('{"type": "object", "required": "name"}', r"The schema is not valid: \$.required: 'name' is not of type 'array'"),
])
def test_a_bad_schema_is_named_where_it_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ChatError, match=message):
        load_schema(text)


def test_a_reply_nested_thousands_deep_is_refused_not_a_crash() -> None:
    """json.loads recursed until Python gave up (RecursionError, "Internal error"): issue 47's
    nesting, in a structured-output reply."""
    deep = "[" * 5000 + "]" * 5000
    check = check_json(deep, {"type": "array"})
    assert check.value is None and check.problems and "Nested more than" in check.problems[0]
    assert check_json("[" * 20 + "1" + "]" * 20).value is not None  # ordinary nesting still parses
