"""Tool names and tags (spec/SPEC.md §1c): what a name may be, and how the models number the names a policy mentions."""

from __future__ import annotations

MAX_NAME_CHARS = 64


def name_problem(value) -> str:
    """Why `value` is not a tool name or tag (spec/SPEC.md §1c), or "": a string of at most MAX_NAME_CHARS printable
    characters, not holding both quote characters (so every form can write it back)."""
    if not isinstance(value, str):
        return f"a name is a string, got {type(value).__name__}"
    if len(value) > MAX_NAME_CHARS:
        return f"a name has at most {MAX_NAME_CHARS} characters, got {len(value)}"
    if not value.isprintable():
        return f"a name has only printable characters, got {value[:MAX_NAME_CHARS]!r}"
    if "'" in value and '"' in value:
        return "a name cannot hold both quote characters"
    return ""


def name_code(names: tuple, value: str) -> int:
    """A name's value in the models: its 1-based index among the mentioned `names`, 0 for every other name."""
    return names.index(value) + 1 if value in names else 0


def unmentioned_name(names: tuple) -> str:
    """The one name that stands for every name not in `names`: "" unless mentioned, else other, other2, ..."""
    candidates = ["", "other"] + [f"other{k}" for k in range(2, len(names) + 3)]
    return next(c for c in candidates if c not in names)


def name_of(names: tuple, code: int) -> str:
    """The name a model's value stands for (name_code's inverse on 1..len(names); unmentioned_name otherwise)."""
    return names[code - 1] if 1 <= code <= len(names) else unmentioned_name(names)
