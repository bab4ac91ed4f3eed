"""Precedence-climbing parser for the policy expression mini-language (its tokens: tokens.py).

Grammar, loosest binding first:

    expr   := or_expr ['if' or_expr 'else' expr]          (Python-style conditional, -> Cond)
    or     := and ('or' and)*
    and    := not ('and' not)*
    not    := 'not' not | cmp
    cmp    := sum ((< <= > >= == !=) sum)*                (a < b < c means a < b and b < c)
            | sum ['not'] 'in' '[' literal, ... ']'
    sum    := term (('+' | '-') term)*
    term   := neg (('*' | '/' | '//' | '%') neg)*
    neg    := '-' neg | atom
    atom   := number | 'enum name' | "enum name" | true | false | attribute
            | min(expr, expr, ...) | max(expr, expr, ...) | abs(expr) | '(' expr ')'
            | count(expr) | count_newer(expr) | ... (an aggregate: spec.policy.AGGREGATES)

Binary operators associate to the left.  The parser never evaluates anything; it only builds
the AST of prunecheck.spec.policy, and every problem is a PolicySyntaxError with a position.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (
    AGGREGATES,
    ATTRS,
    CALLABLE,
    ENUM_VALUES,
    SPAN_ATTRS,
    WINDOW_ATTRS,
    Attr,
    Binary,
    BoolLit,
    Call,
    Cond,
    EnumLit,
    InSet,
    Loc,
    Num,
    Unary,
)

from prunecheck.checker.language.bounds import MAX_DEPTH, closest
from prunecheck.checker.language.builder import Builder, is_literal, too_deep_message
from prunecheck.checker.language.printer import P_ADD, P_AND, P_CMP, P_COND, P_MUL, P_NEG, P_NOT, P_OR
from prunecheck.checker.language.tokens import KEYWORDS, Locator, text_locator, tokenize

COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_BINARY = {"or": P_OR, "and": P_AND, "+": P_ADD, "-": P_ADD, "*": P_MUL, "/": P_MUL, "//": P_MUL, "%": P_MUL}
_ALL_ENUM_NAMES = tuple(v for values in ENUM_VALUES.values() for v in values)


def unknown_name_message(name: str) -> str:
    if name in _ALL_ENUM_NAMES:
        return f"unknown name `{name}`: enum names are quoted, write '{name}'"
    if name in ("True", "False"):
        return f"unknown name `{name}`; did you mean `{name.lower()}`?"
    if name in ("span", "window"):
        return f"unknown name `{name}`: write attributes bare, e.g. `tokens` or `window_tokens`"
    best = closest(name, tuple(ATTRS) + CALLABLE + KEYWORDS)
    hint = f"; did you mean `{best}`?" if best else ""
    return (
        f"unknown name `{name}`{hint} (span attributes: {', '.join(SPAN_ATTRS)}; "
        f"window attributes: {', '.join(WINDOW_ATTRS)})"
    )


class _Parser:
    def __init__(self, text: str, file: str, locate: Locator, builder: Builder):
        self.file = file
        self.locate = locate
        self.tokens = tokenize(text, file, locate)
        self.pos = 0
        self.b = builder
        self.pending = 0  # enclosing operator positions: each will add an AST level
        self.parens = 0  # enclosing brackets

    # -- helpers
    def peek(self, k: int = 0):
        return self.tokens[min(self.pos + k, len(self.tokens) - 1)]

    def advance(self):
        tok = self.tokens[self.pos]
        if tok[0] != "eof":
            self.pos += 1
        return tok

    def loc(self, tok) -> Loc:
        return Loc(*self.locate(tok[2]))

    def fail(self, message, tok):
        raise PolicySyntaxError(message, self.file, *self.locate(tok[2]))

    def is_(self, tok, kind, text=None) -> bool:
        return tok[0] == kind and (text is None or tok[1] == text)

    def describe(self, tok) -> str:
        if tok[0] == "eof":
            return "the end of the expression"
        if tok[0] == "str":
            return f"'{tok[1]}'"
        return f"`{tok[1]}`"

    def expect(self, text, what):
        tok = self.peek()
        if tok[0] in ("op", "kw") and tok[1] == text:
            return self.advance()
        self.fail(f"expected {what}, found {self.describe(tok)}", tok)

    def enter(self, tok, brackets: bool = False):
        if brackets:
            self.parens += 1
            if self.parens > MAX_DEPTH:
                self.fail(f"too many nested brackets (more than {MAX_DEPTH})", tok)
        else:
            self.pending += 1
            if self.pending > MAX_DEPTH:
                self.fail(too_deep_message(), tok)

    def leave(self, brackets: bool = False):
        if brackets:
            self.parens -= 1
        else:
            self.pending -= 1

    def node(self, cls, *args, tok, children=()):
        return self.b.make(cls, *args, loc=self.loc(tok), children=children)

    # -- grammar
    def parse(self):
        if self.peek()[0] == "eof":
            self.fail("empty expression", self.peek())
        expr = self.expr(P_COND)
        tok = self.peek()
        if tok[0] != "eof":
            if self.is_(tok, "op", ")") or self.is_(tok, "op", "]"):
                self.fail(f"unmatched {tok[1]}", tok)
            self.fail(f"unexpected {self.describe(tok)} after a complete expression", tok)
        return expr

    def expr(self, min_prec: int):
        left = self.prefix(min_prec)
        while True:
            tok = self.peek()
            kind, text = tok[0], tok[1]
            if kind in ("op", "kw") and text in _BINARY and _BINARY[text] >= min_prec:
                self.advance()
                self.enter(tok)
                right = self.expr(_BINARY[text] + 1)
                self.leave()
                left = self.node(Binary, text, left, right, tok=tok, children=(left, right))
            elif P_CMP >= min_prec and (
                (kind == "op" and text in COMPARISONS)
                or self.is_(tok, "kw", "in")
                or (self.is_(tok, "kw", "not") and self.is_(self.peek(1), "kw", "in"))
            ):
                left = self.comparison(left)
            elif self.is_(tok, "kw", "if") and P_COND >= min_prec:
                self.advance()
                self.enter(tok)
                test = self.expr(P_OR)
                self.expect("else", "`else` to complete `... if ... else ...`")
                orelse = self.expr(P_COND)
                self.leave()
                left = self.node(Cond, test, left, orelse, tok=tok, children=(test, left, orelse))
            elif self.is_(tok, "kw", "not") and not self.is_(self.peek(1), "kw", "in"):
                self.fail("unexpected `not`: did you mean `not in`?", tok)
            else:
                return left

    def comparison(self, left):
        operands, ops = [left], []
        while True:
            tok = self.peek()
            if tok[0] == "op" and tok[1] in COMPARISONS:
                self.advance()
                self.enter(tok)
                operands.append(self.expr(P_CMP + 1))
                self.leave()
                ops.append((tok[1], self.loc(tok)))
            elif self.is_(tok, "kw", "in") or (self.is_(tok, "kw", "not") and self.is_(self.peek(1), "kw", "in")):
                if ops:
                    self.fail("`in` cannot be chained with another comparison: join them with `and`", tok)
                negated = tok[1] == "not"
                if negated:
                    self.advance()
                in_tok = self.advance()
                self.enter(in_tok)
                values = self.in_list()
                self.leave()
                node = self.node(InSet, left, tuple(values), tok=in_tok, children=(left,) + tuple(values))
                if negated:
                    node = self.node(Unary, "not", node, tok=tok, children=(node,))
                after = self.peek()
                if (after[0] == "op" and after[1] in COMPARISONS) or self.is_(after, "kw", "in"):
                    self.fail("`in` cannot be chained with another comparison: join them with `and`", after)
                return node
            else:
                break
        if len(ops) == 1:
            return self.b.make(Binary, ops[0][0], operands[0], operands[1], loc=ops[0][1], children=operands)
        return self.b.chain_comparisons(operands, ops)

    def in_list(self):
        open_tok = self.peek()
        if not self.is_(open_tok, "op", "["):
            self.fail(f"expected a list like [a, b] after `in`, found {self.describe(open_tok)}", open_tok)
        self.advance()
        self.enter(open_tok, brackets=True)
        values = []
        while not self.is_(self.peek(), "op", "]"):
            start = self.peek()
            value = self.expr(P_COND)
            if not is_literal(value):
                self.fail("values in an `in` list must be literals: numbers, quoted enum names, true or false", start)
            values.append(value)
            if self.is_(self.peek(), "op", ","):
                self.advance()
            elif not self.is_(self.peek(), "op", "]"):
                self.fail(f"expected `,` or `]` in the list, found {self.describe(self.peek())}", self.peek())
        self.advance()
        self.leave(brackets=True)
        return values

    def prefix(self, min_prec: int):
        tok = self.peek()
        if self.is_(tok, "kw", "not"):
            if min_prec > P_NOT:
                self.fail("`not` must be parenthesised here: write (not ...)", tok)
            self.advance()
            self.enter(tok)
            arg = self.expr(P_NOT)
            self.leave()
            return self.node(Unary, "not", arg, tok=tok, children=(arg,))
        if self.is_(tok, "op", "-"):
            self.advance()
            self.enter(tok)
            arg = self.expr(P_NEG)
            self.leave()
            return self.node(Unary, "-", arg, tok=tok, children=(arg,))
        if self.is_(tok, "op", "+"):
            self.fail("unary + is not allowed", tok)
        return self.atom()

    def atom(self):
        tok = self.advance()
        kind, text = tok[0], tok[1]
        if kind == "num":
            return self.node(Num, Fraction(text), tok=tok)
        if kind == "str":
            return self.node(EnumLit, text, tok=tok)
        if kind == "kw" and text in ("true", "false"):
            return self.node(BoolLit, text == "true", tok=tok)
        if kind == "name":
            if self.is_(self.peek(), "op", "("):
                return self.call(tok)
            if text in CALLABLE:
                self.fail(f"`{text}` is a function: call it as {text}(...)", tok)
            if text not in ATTRS:
                self.fail(unknown_name_message(text), tok)
            return self.node(Attr, text, tok=tok)
        if self.is_(tok, "op", "("):
            self.enter(tok, brackets=True)
            inner = self.expr(P_COND)
            self.leave(brackets=True)
            close = self.peek()
            if not self.is_(close, "op", ")"):
                opened = self.loc(tok).col
                self.fail(f"expected `)` to close the `(` at column {opened}, found {self.describe(close)}", close)
            self.advance()
            return inner
        if kind == "eof":
            self.fail("unexpected end of expression: an operand is missing", tok)
        if self.is_(tok, "op", "["):
            self.fail("a list is only allowed after `in`", tok)
        self.fail(f"expected an operand, found {self.describe(tok)}", tok)

    def call(self, name_tok):
        fn = name_tok[1]
        if fn not in CALLABLE:
            best = closest(fn, CALLABLE)
            hint = f"; did you mean `{best}`?" if best else ""
            self.fail(f"unknown function `{fn}`{hint} (only {', '.join(CALLABLE)} may be called)", name_tok)
        open_tok = self.advance()
        self.enter(open_tok, brackets=True)
        self.enter(name_tok)
        args = []
        while not self.is_(self.peek(), "op", ")"):
            args.append(self.expr(P_COND))
            if self.is_(self.peek(), "op", ","):
                self.advance()
            elif not self.is_(self.peek(), "op", ")"):
                self.fail(f"expected `,` or `)` in the call to {fn}, found {self.describe(self.peek())}", self.peek())
        self.advance()
        self.leave()
        self.leave(brackets=True)
        if fn == "abs" and len(args) != 1:
            self.fail(f"abs takes exactly one argument, got {len(args)}", name_tok)
        if fn in ("min", "max") and len(args) < 2:
            self.fail(f"{fn} takes at least two arguments, got {len(args)}", name_tok)
        if fn in AGGREGATES and len(args) != 1:
            self.fail(f"{fn} takes exactly one argument, a condition on the counted span, got {len(args)}", name_tok)
        return self.node(Call, fn, tuple(args), tok=name_tok, children=tuple(args))


def parse_expr(
    text: str,
    file: str = "<policy>",
    locate: Optional[Locator] = None,
    *,
    builder: Optional[Builder] = None,
):
    """Parse one expression of the mini-language into the policy AST (no type checking).

    locate maps a character offset in text to a 1-based (line, col) in the file; by default
    positions are relative to text itself.  Pass a shared builder to bound several expressions
    of one policy together.
    """
    if not isinstance(text, str):
        raise PolicySyntaxError(f"expression must be text, got {type(text).__name__}", file, 1, 1)
    locate = locate or text_locator(text)
    return _Parser(text, file, locate, builder or Builder(file)).parse()


__all__ = ["parse_expr", "tokenize", "text_locator", "Builder", "KEYWORDS", "is_literal", "too_deep_message"]
