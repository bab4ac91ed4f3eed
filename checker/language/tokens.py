"""The tokens of the policy expression mini-language: numbers, names, keywords, quoted enum names, operators."""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Optional, Tuple

from prunecheck.spec.errors import PolicySyntaxError

from prunecheck.checker.language.bounds import MAX_DIGITS, MAX_NAME

Locator = Callable[[int], Tuple[int, int]]

KEYWORDS = ("and", "or", "not", "in", "if", "else", "true", "false")
_DIGITS = "0123456789"
MAX_PLACES = 100  # a denominator below 10**MAX_DIGITS that divides a power of ten divides 10**99
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_WORD = _LETTERS + _DIGITS
_OPERATOR_HINTS = (
    ("=", "`=` is not an operator: write == to compare"),
    ("&&", "`&&` is not an operator: write and"),
    ("||", "`||` is not an operator: write or"),
    ("!", "`!` is not an operator: write not"),
)


def _short_enough(literal: str) -> bool:
    """At most MAX_DIGITS digits, or the exact decimal of a Num within the bounds (e.g. a double from a .py policy:
    0.1 there is 3602879701896397/2**55, whose decimal has 55 places)."""
    whole, _, places = literal.partition(".")
    if len(whole) + len(places) <= MAX_DIGITS:
        return True
    if len(whole) > MAX_DIGITS or len(places) > MAX_PLACES:
        return False
    value = Fraction(literal)
    return value.numerator < 10**MAX_DIGITS and value.denominator < 10**MAX_DIGITS


def text_locator(text: str, line: int = 1, col: int = 1) -> Locator:
    """Positions inside text itself, starting at (line, col)."""
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)

    def locate(offset: int) -> Tuple[int, int]:
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        if lo == 0:
            return line, col + offset
        return line + lo, offset - starts[lo] + 1

    return locate


# A token is (kind, text, offset): kind in num, name, kw, str, op, eof.


def tokenize(text: str, file: str = "<policy>", locate: Optional[Locator] = None) -> list:
    """Split expression text into tokens; raises PolicySyntaxError on anything outside the language."""
    locate = locate or text_locator(text)

    def fail(message, offset):
        raise PolicySyntaxError(message, file, *locate(offset))

    tokens = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            j = i + 1
        elif ch in _DIGITS:
            j = _number_end(text, i, fail)
            tokens.append(("num", text[i:j], i))
        elif ch in _LETTERS:
            j = _word_end(text, i, fail)
            tokens.append(("kw" if text[i:j] in KEYWORDS else "name", text[i:j], i))
        elif ch in "'\"":
            j = _string_end(text, i, fail)
            tokens.append(("str", text[i + 1 : j - 1], i))
        elif text.startswith(("<=", ">=", "==", "!=", "//"), i):
            j = i + 2
            tokens.append(("op", text[i:j], i))
        elif ch in "<>+-*/%()[],":
            j = i + 1
            tokens.append(("op", ch, i))
        else:
            _refuse_character(text, i, tokens, fail)
        i = j
    tokens.append(("eof", "", n))
    return tokens


def _number_end(text: str, i: int, fail) -> int:
    n = len(text)
    j = i
    while j < n and text[j] in _DIGITS:
        j += 1
    if j < n and text[j] == ".":
        k = j + 1
        while k < n and text[k] in _DIGITS:
            k += 1
        if k == j + 1:
            fail(f"malformed number `{text[i:k]}`: write digits after the decimal point", i)
        j = k
    if j < n and (text[j] in _WORD or text[j] == "." or text[j].isalnum()):
        end = j  # show the whole malformed literal, e.g. 1e-5 or 0x1F or 1.2.3
        while end < n and (text[end].isalnum() or text[end] in "_." or (text[end] in "+-" and text[end - 1] in "eE")):
            end += 1
        fail(f"malformed number `{text[i:end][:40]}`: numbers are plain decimals like 12 or 0.25", i)
    if not _short_enough(text[i:j]):
        digits = sum(1 for c in text[i:j] if c in _DIGITS)
        fail(
            f"number literal is too long: {digits} digits (at most {MAX_DIGITS}, or the exact decimal of a "
            f"fraction whose numerator and denominator have at most {MAX_DIGITS} digits)",
            i,
        )
    return j


def _word_end(text: str, i: int, fail) -> int:
    n = len(text)
    j = i
    while j < n and text[j] in _WORD:
        j += 1
    if j - i > MAX_NAME:
        fail(f"name is too long: {j - i} characters (at most {MAX_NAME})", i)
    if j < n and text[j].isalnum():  # a non-ASCII letter glued to the name
        fail(f"unexpected character {text[j]!r} in a name", j)
    return j


def _string_end(text: str, i: int, fail) -> int:
    """The offset after the closing quote of the enum name that opens at i."""
    quote, n = text[i], len(text)
    j = i + 1
    while j < n and text[j] != quote and text[j] not in "\r\n":
        j += 1
    if j >= n or text[j] != quote:
        fail(f"unterminated string: missing closing {quote}", i)
    if j - i - 1 > MAX_NAME:
        fail(f"enum name is too long: {j - i - 1} characters (at most {MAX_NAME})", i)
    return j + 1


def _refuse_character(text: str, i: int, tokens: list, fail) -> None:
    """Fail at a character that starts no token, with a hint for what was probably meant."""
    ch, n = text[i], len(text)
    for start, message in _OPERATOR_HINTS:
        if text.startswith(start, i):
            fail(message, i)
    if ch == "." and i + 1 < n and text[i + 1] in _DIGITS:
        fail(f"write a digit before the decimal point: 0{text[i:i + 4]}", i)
    if ch == "." and tokens and tokens[-1][0] == "name" and tokens[-1][1] in ("span", "window"):
        fail(f"write attributes bare: `tokens`, not `{tokens[-1][1]}.tokens`", tokens[-1][2])
    fail(f"unexpected character {ch!r}", i)


__all__ = ["KEYWORDS", "Locator", "text_locator", "tokenize"]
