"""Reading a policy's compaction stage keys (SPEC §4b-§4h) from YAML/JSON nodes: one stage's, or a list's."""

from __future__ import annotations

import re
from typing import Tuple

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from prunecheck.spec.policy import EFFECTS, ORDERS, PAIRS, ROLES, SIZED, STAGE_KEYS, SUMMARY_AT, SUMMARY_ROLES, BoolLit, Loc

from prunecheck.checker.language.expr_parser import Builder, parse_expr
from prunecheck.checker.language.nodes import YAML_TAG, is_null, items, joined_surrogates, kind_of, scalar_locator, string
from prunecheck.checker.language.source_text import SourceText
from prunecheck.checker.language.typecheck import MAX_DIGITS, ORDER_WITH_RANK, suggestion

_INTEGER = re.compile(r"0|[1-9][0-9]*")


def expression(src: SourceText, node, what: str, builder: Builder):
    if not isinstance(node, ScalarNode):
        src.fail_at(f"`{what}` must be an expression (a string, number or boolean), got {kind_of(node)}", node)
    if is_null(src, node):
        src.fail_at(f"`{what}` has no expression", node)
    plain_json_bool = src.form == "json" and node.style is None and node.value in ("true", "false")
    if plain_json_bool or (src.form == "yaml" and node.tag == YAML_TAG + "bool"):
        if node.value.lower() not in ("true", "false"):
            src.fail_at(f"`{node.value}` is a YAML 1.1 boolean: write true or false", node)
        loc = Loc(*src.pos(node.start_mark.index))
        return builder.make(BoolLit, node.value.lower() == "true", loc=loc)
    return parse_expr(joined_surrogates(src, node, node.value), src.file, scalar_locator(src, node), builder=builder)


def whole_number(src: SourceText, node, what: str = "budget") -> int:
    if not isinstance(node, ScalarNode) or node.style is not None or not _INTEGER.fullmatch(node.value):
        shown = node.value[:40] if isinstance(node, ScalarNode) else kind_of(node)
        src.fail_at(f"{what} must be a whole number of tokens >= 1, got `{shown}`", node)
    if len(node.value) > MAX_DIGITS:
        src.fail_at(f"{what} is too large: at most {MAX_DIGITS} digits", node)
    value = int(node.value)
    if value < 1:
        src.fail_at(f"{what} must be at least 1", node)
    return value


def _order(src: SourceText, fields: dict) -> str:
    """The `order` key: oldest or newest, and only without a rank (a rank orders the candidates itself)."""
    node = fields["order"]
    value = string(src, node, "order")
    if value not in ORDERS:
        src.fail_at(f"order must be one of {', '.join(ORDERS)}, got `{value[:64]}`{suggestion(value, ORDERS)}", node)
    if "rank" in fields:
        src.fail_at(ORDER_WITH_RANK, node)
    return value


def _stage(src: SourceText, fields: dict, builder: Builder) -> dict:
    """The compaction stage's keys that are given: keep, when, until (expressions) and order."""
    out = {key: expression(src, fields[key], key, builder) for key in ("keep", "when", "until") if key in fields}
    if "order" in fields:
        out["order"] = _order(src, fields)
    return out


def _summary_key(src: SourceText, fields: dict, effect: str, key: str, choices: tuple) -> str:
    """`summary_role` or `summary_at` (only with summarise): the role of the summary a compaction writes, or where
    it stands (SPEC 4d); the first choice when absent."""
    if key not in fields:
        return choices[0]
    node = fields[key]
    value = string(src, node, key)
    if effect != "summarise":
        src.fail_at(f"{key} is only for `effect: summarise`", node)
    if value not in choices:
        src.fail_at(f"{key} must be one of {', '.join(choices)}, got `{value[:64]}`{suggestion(value, choices)}", node)
    return value


def _effect(src: SourceText, fields: dict) -> Tuple[str, int]:
    """`effect` (evict, mask, cut or summarise) and `placeholder_tokens` (not with evict)."""
    effect = string(src, fields["effect"], "effect") if "effect" in fields else "evict"
    if effect not in EFFECTS:
        src.fail_at(f"effect must be one of {', '.join(EFFECTS)}, got `{effect[:64]}`{suggestion(effect, EFFECTS)}",
                    fields["effect"])
    if "placeholder_tokens" not in fields:
        return effect, 1
    if effect not in SIZED:
        src.fail_at("placeholder_tokens is only for `effect: mask`, `cut` or `summarise`", fields["placeholder_tokens"])
    return effect, whole_number(src, fields["placeholder_tokens"], "placeholder_tokens")


def _pairs(src: SourceText, node) -> str:
    value = string(src, node, "pairs")
    if value not in PAIRS:
        src.fail_at(f"pairs must be one of {', '.join(PAIRS)}, got `{value[:64]}`{suggestion(value, PAIRS)}", node)
    return value


def _start_on(src: SourceText, node) -> str:
    """The `start_on` key: a role (SPEC 4b)."""
    value = string(src, node, "start_on")
    if value not in ROLES:
        src.fail_at(f"start_on must be one of {', '.join(ROLES)}, got `{value[:64]}`{suggestion(value, ROLES)}", node)
    return value


def stage_settings(src: SourceText, fields: dict) -> dict:
    """One stage's settings (effect, placeholder_tokens, summary_role, pairs, start_on, summary_at), checked, as
    Policy's (and
    Stage's) keyword arguments."""
    effect, placeholder = _effect(src, fields)
    out = {"effect": effect, "placeholder_tokens": placeholder}
    if "pairs" in fields:
        out["pairs"] = _pairs(src, fields["pairs"])
    out["summary_role"] = _summary_key(src, fields, effect, "summary_role", SUMMARY_ROLES)
    if "start_on" in fields:
        out["start_on"] = _start_on(src, fields["start_on"])
    out["summary_at"] = _summary_key(src, fields, effect, "summary_at", SUMMARY_AT)
    return out


def stage_expressions(src: SourceText, fields: dict, builder: Builder) -> dict:
    """One stage's expressions (evict, rank, keep, when, until) and order, checked, as keyword arguments."""
    out = {"evict": expression(src, fields["evict"], "evict", builder)}
    if "rank" in fields:
        out["rank"] = expression(src, fields["rank"], "rank", builder)
    out.update(_stage(src, fields, builder))
    return out


def compaction_stages(src: SourceText, node, fields: dict) -> list:
    """`compaction:`, a list of stages (SPEC §4h): each entry's fields, keyed by its stage keys; none of them may
    also stand at the top."""
    if not isinstance(node, SequenceNode) or not node.value:
        src.fail_at(f"compaction must be a list of stages (mappings with the keys {', '.join(STAGE_KEYS)}), got "
                    f"{kind_of(node) if not isinstance(node, SequenceNode) else 'an empty list'}", node)
    for key in STAGE_KEYS:
        if key in fields:
            src.fail_at(f"`{key}` is a stage key: with `compaction:`, it goes in a stage", fields[key])
    stages = []
    for k, entry in enumerate(node.value):
        if not isinstance(entry, MappingNode):
            src.fail_at(f"stage {k + 1} of compaction must be a mapping with the keys {', '.join(STAGE_KEYS)}, got "
                        f"{kind_of(entry)}", entry)
        entry_fields = {}
        for key, knode, vnode in items(src, entry, f"stage {k + 1} of compaction"):
            if key not in STAGE_KEYS:
                src.fail_at(f"unknown stage key `{key[:64]}`{suggestion(key, STAGE_KEYS)} (stage keys: "
                            f"{', '.join(STAGE_KEYS)})", knode)
            entry_fields[key] = vnode
        if "evict" not in entry_fields:
            src.fail_at(f"stage {k + 1} of compaction needs `evict`", entry)
        stages.append(entry_fields)
    return stages
