"""Hostile YAML and JSON: alias bombs, deep nesting, huge scalars, tags, duplicate keys, tabs, BOMs, line breaks."""

from __future__ import annotations

import pytest

from prunecheck.checker.language.typecheck import MAX_DEPTH, MAX_FILE_BYTES

from hostile import NOWHERE, billion_laughs, fn, refusal, verdict
from support import at

# --------------------------------------------------------------------------- YAML-specific hostility


def test_alias_bombs_are_refused_at_the_first_anchor_or_alias():
    at(refusal(billion_laughs(), NOWHERE + ".yaml"), 1, 7, "anchors")
    aliases_only = "name: x\nevict: true\ndescription: [" + ", ".join(["*a"] * 50000) + "]\n"
    at(refusal(aliases_only, NOWHERE + ".yaml"), 3, 15, "aliases")
    at(refusal("name: &a x\nevict: *a\n", NOWHERE + ".yaml"), 1, 7, "anchors")
    at(refusal("*a : 1\nname: x\nevict: true\n", NOWHERE + ".yaml"), 1, 1, "aliases")
    # JSON has no aliases: the same text is simply not JSON
    assert "invalid JSON" in refusal(billion_laughs(), NOWHERE + ".json").message


@pytest.mark.parametrize(
    "opening,closing",
    [("[", "]"), ("{a: ", "}"), ("[{a: ", "}]"), ("- ", "")],
)
def test_deeply_nested_yaml_collections_are_refused_quickly(opening, closing):
    count = (MAX_FILE_BYTES - 100) // (len(opening) + len(closing))
    if opening == "- ":  # block sequences nest by indentation: "- - - - ... x"
        text = "name: x\nevict: true\ndescription:\n  " + "- " * count + "x\n"
    else:
        text = "name: x\nevict: true\ndescription: " + opening * count + "1" + closing * count + "\n"
    err = refusal(text, NOWHERE + ".yaml")
    assert "too many nested collections" in err.message and err.line in (3, 4)


def test_deeply_nested_json_is_refused_quickly():
    count = (MAX_FILE_BYTES - 100) // 2
    text = '{"name": "x", "evict": true, "description": ' + "[" * count + "]" * count + "}"
    # the object is level 1, so the 64th `[` (column 45 + 63) is the 65th level
    at(refusal(text, NOWHERE + ".json"), 1, 45 + MAX_DEPTH - 1, "too many nested collections")


def test_huge_scalars_just_under_and_over_the_size_limit():
    head, tail = "name: x\nevict: true\ndescription: ", "\n"
    room = MAX_FILE_BYTES - len(head) - len(tail)
    assert verdict(head + "a" * room + tail, NOWHERE + ".yaml").description == "a" * room
    at(refusal(head + "a" * (room + 1) + tail, NOWHERE + ".yaml"), 1, 1, "too large")
    at(refusal((head + "a" * (room + 1) + tail).encode(), NOWHERE + ".yaml"), 1, 1, "too large")
    # the limit is in UTF-8 bytes, not characters
    wide = head + "\u00e9" * (room // 2) + tail
    assert verdict(wide, NOWHERE + ".yaml").description == "\u00e9" * (room // 2)
    at(refusal(wide + "\u00e9", NOWHERE + ".yaml"), 1, 1, "too large")
    # a huge quoted expression made of spaces around a tiny one, a huge key, a huge folded scalar
    assert verdict(f'name: x\nevict: "{" " * (room - 40)}pinned"\n', NOWHERE + ".yaml").evict is not None
    # a YAML simple key is at most 1024 characters: past that the colon is out of place
    at(refusal("k" * room + ": 1\nname: x\nevict: true\n", NOWHERE + ".yaml"), 1, room + 1, "invalid YAML")
    folded = "name: x\nevict: true\ndescription: >\n" + "  word word word\n" * ((room - 40) // 17)
    assert verdict(folded, NOWHERE + ".yaml").description.startswith("word word")
    # over the limit as a JSON string and as Python too
    at(refusal('{"name": "' + "a" * MAX_FILE_BYTES + '"}', NOWHERE + ".json"), 1, 1, "too large")
    at(refusal("#" * MAX_FILE_BYTES + "\n" + fn("True"), NOWHERE + ".py"), 1, 1, "too large")


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system ['true']",
        "!!python/object/new:os.system ['true']",
        "!!python/object:os.system {}",
        "!!python/name:os.system ''",
        "!!python/module:os ''",
        "!!binary aGVsbG8=",
        "!!set {a, b}",
        "!!omap [a: 1]",
        "!local x",
        "!<tag:example.com,2000:x> x",
    ],
)
def test_yaml_tags_outside_the_core_schema_are_refused(tag):
    at(refusal(f"name: x\nevict: true\ndescription: {tag}\n", NOWHERE + ".yaml"), 3, 14, "YAML tag")


def test_duplicate_keys_are_refused_whatever_their_spelling():
    cases = [
        ("name: x\nevict: true\n'name': y\n", 3, 1, "duplicate key `name`"),
        ('name: x\nevict: true\n"evict": false\n', 3, 1, "duplicate key `evict`"),
        ("{name: x, evict: true, name: x}", 1, 24, "duplicate key `name`"),
        ("name: x\nevict: true\ndeployment: {pins: host, pins: host}\n", 3, 26, "duplicate key `pins`"),
        ("name: x\nevict: true\nexpect:\n  C1: holds\n  C1: holds\n", 5, 3, "duplicate key `C1`"),
        ("name: x\nevict: true\nname: x\nname: x\n", 3, 1, "duplicate key `name`"),
    ]
    for text, line, col, words in cases:
        at(refusal(text, NOWHERE + ".yaml"), line, col, words)
    at(refusal('{"deployment": {"pins": "host", "pins": "self"}, "name": "x", "evict": true}', NOWHERE + ".json"),
       1, 33, "duplicate key `pins`")
    at(refusal('DEPLOYMENT = {"pins": "host", "pins": "self"}\n' + fn("True"), NOWHERE + ".py"), 1, 31,
       "duplicate key `pins`")


def test_tabs_are_refused_with_a_position_or_accepted_where_yaml_allows_them():
    at(refusal("name: x\nevict: true\ndeployment:\n\tpins: host\n", NOWHERE + ".yaml"), 4, 1, "'\\t'")
    refusal("name:\tx\nevict:\ttrue\n", NOWHERE + ".yaml")
    assert verdict('name: "a\tb"\nevict: true\n', NOWHERE + ".yaml").name == "a\tb"
    assert verdict('{\t"name":\t"x",\t"evict":\t"tokens > 1"\t}', NOWHERE + ".json").evict is not None
    at(refusal('{"name": "x", "evict": "tokens\t> 1"}', NOWHERE + ".json"), 1, 31, "invalid JSON", "control character")
    at(refusal("def evict(span, window):\n\tif span.pinned:\n        return True\n\treturn False\n", NOWHERE + ".py"),
       3, 1, "inconsistent use of tabs")


@pytest.mark.parametrize("extension,text,line,col", [
    (".yaml", "name: x\nevict: tokens > 1 and agee > 2\n", 2, 23),
    (".json", '{"name": "x",\n "evict": "tokens > 1 and agee > 2"}', 2, 27),
    (".py", fn("span.tokens > 1 and span.agee > 2"), 2, 37),
])
def test_boms_and_line_endings_do_not_move_positions(extension, text, line, col):
    name = NOWHERE + extension
    at(refusal(text, name), line, col, "agee")
    for variant in (
        "\ufeff" + text,
        ("\ufeff" + text).encode("utf-8"),
        text.replace("\n", "\r\n"),
        text.replace("\n", "\r\n").encode("utf-8"),
        "\ufeff" + text.replace("\n", "\r\n"),
        text.replace("\n", "\r"),
    ):
        at(refusal(variant, name), line, col, "agee")
    good = text.replace("agee", "age")
    expected = verdict(good, name)
    for variant in ("\ufeff" + good, good.replace("\n", "\r\n"), good.replace("\n", "\r"), good.encode("utf-8")):
        assert verdict(variant, name) == expected
    # other encodings' BOMs are refused cleanly at 1:1; a second UTF-8 BOM is accepted or refused, never a crash
    for bom in ("utf-16", "utf-32"):
        at(refusal(("\ufeff" + good).encode(bom)[2 if bom == "utf-16" else 4:], name), 1, 1, "not valid UTF-8")
        at(refusal(good.encode(bom), name), 1, 1, "not valid UTF-8")
    verdict("\ufeff\ufeff" + good, name)
    verdict(good.replace("\n", "\n\ufeff", 1), name)


def test_unicode_line_breaks_bidi_controls_and_surrogates():
    name = NOWHERE + ".yaml"
    # YAML counts NEL, LS and PS as line breaks, and positions follow it
    at(refusal("name: x\x85evict: agee > 1\u2028", name), 2, 8, "agee")
    at(refusal("name: x\u2029evict: agee > 1\n", name), 2, 8, "agee")
    # bidi controls and zero-width characters are not silently read as part of an expression
    at(refusal("name: x\nevict: \u202etokens > 1\n", name), 2, 8, "unexpected character")
    at(refusal("name: x\nevict: tokens\u2066 > 1\n", name), 2, 14, "unexpected character")
    at(refusal("name: x\nevict: tokens\u200b > 1\n", name), 2, 14, "unexpected character")
    at(refusal(fn("span.tokens\u202e > 1"), NOWHERE + ".py"), 2, 23, "invalid Python")
    # lone surrogates, as str and as (CESU-8 style) bytes; NUL
    at(refusal("name: x\nevict: tr\ud800ue\n", name), 2, 10, "lone surrogate")
    at(refusal(b"name: x\nevict: tr\xed\xa0\x80ue\n", name), 2, 10, "not valid UTF-8")
    at(refusal(fn("span.tokens > 1\udfff"), NOWHERE + ".py"), 2, 27, "lone surrogate")
    at(refusal('{"name": "x", "evict": "tr\x00ue"}', NOWHERE + ".json"), 1, 27, "NUL")


