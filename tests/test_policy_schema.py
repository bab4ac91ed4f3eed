"""The policy JSON Schema: every example validates, and it rejects what the loader rejects where a schema can say so."""

import json

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.language.loader import TOP_KEYS, parse_policy_text
from prunecheck.checker.language.policy_schema import policy_schema
from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, DEPLOYMENT_KEYS, DEPLOYMENT_NAMES

from conftest import EXAMPLES

SCHEMA = policy_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
BASE = {"name": "p", "evict": "idle > 3"}


def schema_accepts(doc) -> bool:
    return VALIDATOR.is_valid(doc)


def loader_accepts(doc) -> bool:
    try:
        parse_policy_text(json.dumps(doc), "p.json")
    except PolicySyntaxError:
        return False
    return True


def test_the_schema_is_a_valid_draft_2020_12_schema_over_the_loaders_keys():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert tuple(SCHEMA["properties"]) == TOP_KEYS
    deployment = SCHEMA["properties"]["deployment"]["properties"]
    assert {key: tuple(d["enum"]) for key, d in deployment.items() if key not in DEPLOYMENT_NAMES} == DEPLOYMENT_CHOICES
    assert {key: (d["type"], d["default"]) for key, d in deployment.items() if key in DEPLOYMENT_NAMES} == {
        key: ("string", default) for key, default in DEPLOYMENT_NAMES.items()}


@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".yaml", ".yml", ".json")),
                         ids=lambda p: p.name)
def test_every_example_policy_validates(path):
    text = path.read_text(encoding="utf-8")
    VALIDATOR.validate(json.loads(text) if path.suffix == ".json" else yaml.safe_load(text))


REJECTED = {
    "unknown key": {**BASE, "evcit": "x"},
    "missing name": {"evict": "idle > 3"},
    "missing evict": {"name": "p"},
    "blank name": {**BASE, "name": "  "},
    "name a number": {**BASE, "name": 3},
    "evict a list": {**BASE, "evict": ["idle > 3"]},
    "evict null": {**BASE, "evict": None},
    "evict a number": {**BASE, "evict": 3},
    "rank a mapping": {**BASE, "rank": {"x": 1}},
    "budget a string": {**BASE, "budget": "12"},
    "budget zero": {**BASE, "budget": 0},
    "budget a fraction": {**BASE, "budget": 1.5},
    "budget a boolean": {**BASE, "budget": True},
    "deployment a list": {**BASE, "deployment": ["records"]},
    "bad deployment key": {**BASE, "deployment": {"record": "window"}},
    "bad deployment value": {**BASE, "deployment": {"records": "windows"}},
    "deployment value a number": {**BASE, "deployment": {"pins": 1}},
    "description null": {**BASE, "description": None},
    "expect a list": {**BASE, "expect": ["C1"]},
    "expect value null": {**BASE, "expect": {"C1": None}},
    "expect a misspelt verdict": {**BASE, "expect": {"C1": "hold"}},
    "expect an unknown condition": {**BASE, "expect": {"Z9": "holds"}},
    "expect a lower-case condition": {**BASE, "expect": {"c1": "holds"}},
    "accept a mapping": {**BASE, "accept": {"condition": "C2", "reason": "r"}},
    "accept unknown condition": {**BASE, "accept": [{"condition": "C9", "reason": "r"}]},
    "accept blank reason": {**BASE, "accept": [{"condition": "C2", "reason": " "}]},
    "accept without reason": {**BASE, "accept": [{"condition": "C2"}]},
    "accept extra key": {**BASE, "accept": [{"condition": "C2", "reason": "r", "until": "2030"}]},
    "accept twice": {**BASE, "accept": [{"condition": "C2", "reason": "a"}, {"condition": "C2", "reason": "b"}]},
    "accept entry a string": {**BASE, "accept": ["C2"]},
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_what_the_loader_rejects_the_schema_rejects(name):
    doc = REJECTED[name]
    assert not loader_accepts(doc)
    assert not schema_accepts(doc)


def test_a_full_policy_is_accepted_by_both():
    doc = {**BASE, "description": "", "rank": 2, "budget": 10 ** 29, "deployment": {"records": "window"},
           "expect": {"C1": "holds"}, "accept": [{"condition": "C2", "reason": "no host budgets"}]}
    assert loader_accepts(doc) and schema_accepts(doc)


# Values are valid expressions or structural mistakes, never malformed expressions: a loader refusal is structural.
VALUES = {
    "name": st.sampled_from(["p", "", " ", 3, None, True, ["p"]]),
    "description": st.sampled_from(["d", "", None, 1]),
    "evict": st.sampled_from(["idle > 3", True, False, 3, None, {"a": 1}]),
    "rank": st.sampled_from(["recency", "2 * idle", 2, 0.5, None, ["x"]]),
    "budget": st.sampled_from([1, 12, 0, -3, "12", 1.5, True, None]),
    "deployment": st.dictionaries(st.sampled_from([*DEPLOYMENT_KEYS, "bogus"]),
                                  st.sampled_from(["window", "host", "self", "blind", "undo_region", "nope", 1]),
                                  max_size=3) | st.sampled_from([None, [], "window"]),
    "expect": st.dictionaries(st.sampled_from([*CONDITIONS, "Z9"]),
                              st.sampled_from(["holds", "violated", "unknown", "hold", None, ["x"]]),
                              max_size=2) | st.sampled_from([None, "holds"]),
    "accept": st.lists(st.fixed_dictionaries({"condition": st.sampled_from([*CONDITIONS, "C9", 2])},
                                             optional={"reason": st.sampled_from(["r", "", " ", None]),
                                                       "extra": st.just("x")}), max_size=3)
    | st.sampled_from([None, "C2", {}]),
    "extra": st.just("x"),
}


@settings(max_examples=300)
@given(st.fixed_dictionaries({}, optional=VALUES))
def test_on_generated_policies_the_schema_and_the_loader_agree(doc):
    assert schema_accepts(doc) == loader_accepts(doc)


@pytest.mark.parametrize("text,loader_ok", [
    ("name: p\nevict: idle > 3\nbudget: 0x10\n", False),  # YAML 1.1 spellings: the schema sees the value 16
    ("name: p\nevict: yes\n", False),  # ... and True
    ("name: 3\nevict: idle > 3\n", True),  # the loader reads the scalar as text; the schema wants it quoted
])
def test_the_differences_the_readme_states_are_yaml_spellings_and_stricter_types(text, loader_ok):
    try:
        parse_policy_text(text, "p.yaml")
        parsed = True
    except PolicySyntaxError:
        parsed = False
    assert parsed == loader_ok and schema_accepts(yaml.safe_load(text)) != loader_ok
