"""A minimal SMT-LIB term reader for certificate invariants: one `define-fun Inv`, parsed, sort-checked, reprinted."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHARS = 1 << 20
MAX_NODES = 200_000
MAX_DEPTH = 128

_SYMBOL = re.compile(r"[A-Za-z~!@$%^&*_+=<>.?/\-][A-Za-z0-9~!@$%^&*_+=<>.?/\-]*\Z")
_NUMERAL = re.compile(r"(0|[1-9][0-9]*)\Z")
_TOKEN = re.compile(r"[()]|[^ \t\r\n()]+")
_NOT_ASCII = re.compile(r"[^\x20-\x7e\t\r\n]")
_FORBIDDEN = {";": "a comment", '"': "a string literal", "|": "a quoted |symbol|", "#": "a binary or hex literal",
              ":": "a keyword", "'": "a quote", "`": "a backquote", ",": "a comma", "\\": "a backslash"}
_FORBIDDEN_RE = re.compile("[" + re.escape("".join(_FORBIDDEN)) + "]")

# Operators: (argument sort, result sort, least and greatest arity); "same" takes any one sort for every argument.
OPERATORS = {
    "and": ("Bool", "Bool", 1, None), "or": ("Bool", "Bool", 1, None), "=>": ("Bool", "Bool", 2, None),
    "not": ("Bool", "Bool", 1, 1), "xor": ("Bool", "Bool", 2, None),
    "=": ("same", "Bool", 2, None), "distinct": ("same", "Bool", 2, None),
    "+": ("Int", "Int", 2, None), "*": ("Int", "Int", 2, None), "-": ("Int", "Int", 1, None),
    "abs": ("Int", "Int", 1, 1), "div": ("Int", "Int", 2, 2), "mod": ("Int", "Int", 2, 2),
    "<=": ("Int", "Bool", 2, None), "<": ("Int", "Bool", 2, None), ">=": ("Int", "Bool", 2, None),
    ">": ("Int", "Bool", 2, None),
}
RESERVED = {"let", "ite", "true", "false", "Bool", "Int", "Inv", "define-fun", "as", "!", "_", "forall", "exists",
            "match", "par", "NUMERAL", "DECIMAL", "STRING"}


class SmtError(Exception):
    """A certificate invariant that is not accepted: one line, with line:column where there is one."""


@dataclass(frozen=True)
class Atom:
    text: str
    at: int


@dataclass(frozen=True)
class SList:
    items: tuple
    at: int


def _at(node) -> str:
    """A node's offset, marked, for `read_definition` to turn into line:column (only errors need it)."""
    return f"\x00{node.at}\x00"


_MARK = re.compile("\x00([0-9]+)\x00")


def _show(name: str) -> str:
    return name if len(name) <= 40 else name[:37] + "..."


def where(source: str, offset: int) -> str:
    """line:column of an offset, both from 1."""
    line = source.count("\n", 0, offset)
    return f"{line + 1}:{offset - source.rfind(chr(10), 0, offset)}"


def parse(text: str) -> list:
    """The top-level S-expressions of `text`, iteratively, with depth and size bounded; refuses comments, strings,
    quoted symbols, keywords and every character that is not printable ASCII."""
    if len(text) > MAX_CHARS:
        raise SmtError(f"longer than {MAX_CHARS} characters")
    odd = _NOT_ASCII.search(text)
    if odd:
        raise SmtError(f"character U+{ord(odd.group()):04X} at {where(text, odd.start())} "
                       "(only printable ASCII is allowed)")
    odd = _FORBIDDEN_RE.search(text)
    if odd:
        raise SmtError(f"{_FORBIDDEN[odd.group()]} at {where(text, odd.start())}")
    stack, top, count = [], [], 0
    for match in _TOKEN.finditer(text):
        token, at = match.group(), match.start()
        count += 1
        if count > MAX_NODES:
            raise SmtError(f"more than {MAX_NODES} tokens")
        if token == "(":
            if len(stack) >= MAX_DEPTH:
                raise SmtError(f"nested deeper than {MAX_DEPTH} at {where(text, at)}")
            stack.append((at, []))
        elif token == ")":
            if not stack:
                raise SmtError(f"unbalanced ')' at {where(text, at)}")
            start, items = stack.pop()
            (stack[-1][1] if stack else top).append(SList(tuple(items), start))
        else:
            (stack[-1][1] if stack else top).append(Atom(token, at))
    if stack:
        raise SmtError(f"unclosed '(' opened at {where(text, stack[-1][0])}")
    return top


@dataclass(frozen=True)
class Signature:
    """What Inv must look like: its parameters (name, sort) in order, the enumeration sorts, the model's own names."""

    params: tuple
    constructors: dict
    model_symbols: frozenset


@dataclass(frozen=True)
class Definition:
    """A checked `define-fun Inv`, to be printed by `text()` rather than taken from the document."""

    params: tuple
    body: object

    def text(self) -> str:
        params = " ".join(f"({name} {sort})" for name, sort in self.params)
        return f"(define-fun Inv ({params}) Bool {print_term(self.body)})\n"


def read_definition(text: str, signature: Signature) -> Definition:
    """Exactly one `(define-fun Inv (params) Bool BODY)` with the signature's parameters and a Bool BODY."""
    try:
        return _read_definition(text, signature)
    except SmtError as exc:
        raise SmtError(_MARK.sub(lambda m: where(text, int(m.group(1))), str(exc))) from None


def _read_definition(text: str, signature: Signature) -> Definition:
    commands = parse(text)
    if not commands:
        raise SmtError("empty: no definition of Inv")
    first = commands[0]
    if len(commands) > 1:
        raise SmtError(f"a second command after the definition of Inv at {_at(commands[1])}")
    if not isinstance(first, SList) or not first.items or not isinstance(first.items[0], Atom) \
            or first.items[0].text != "define-fun":
        raise SmtError(f"the command at {_at(first)} is not define-fun")
    items = first.items
    if len(items) != 5 or not isinstance(items[1], Atom) or items[1].text != "Inv":
        raise SmtError(f"expected (define-fun Inv (PARAMS) Bool BODY) at {_at(first)}")
    _check_params(items[2], signature.params)
    if not isinstance(items[3], Atom) or items[3].text != "Bool":
        raise SmtError(f"Inv's result sort at {_at(items[3])} is not Bool")
    sort = _Checker(signature).sort_of(items[4])
    if sort != "Bool":
        raise SmtError(f"Inv's body at {_at(items[4])} has sort {sort}, not Bool")
    return Definition(signature.params, items[4])


def _check_params(node, expected: tuple) -> None:
    if not isinstance(node, SList):
        raise SmtError(f"Inv's parameter list at {_at(node)} is not a list")
    got = []
    for item in node.items:
        if not (isinstance(item, SList) and len(item.items) == 2 and all(isinstance(x, Atom) for x in item.items)):
            raise SmtError(f"malformed parameter at {_at(item)}")
        got.append((item.items[0].text, item.items[1].text))
    for i, (have, want) in enumerate(zip(got, expected)):
        if have != want:
            raise SmtError(f"parameter {i + 1} at {_at(node.items[i])} is ({_show(have[0])} {_show(have[1])}), "
                           f"the model's is ({want[0]} {want[1]})")
    if len(got) != len(expected):
        raise SmtError(f"Inv has {len(got)} parameters, the model's state has {len(expected)}")


_ALLOWED = " (only its parameters, constructors, numerals, let and theory operators)"


class _Checker:
    """Sorts of body terms; a term is refused at its position as soon as it uses anything outside the whitelist."""

    def __init__(self, signature: Signature):
        self.signature = signature
        self.params = dict(signature.params)
        self.scopes = []

    def sort_of(self, node) -> str:
        if isinstance(node, Atom):
            return self._atom(node)
        if not node.items:
            raise SmtError(f"empty application () at {_at(node)}")
        head = node.items[0]
        if isinstance(head, SList):
            return self._tester(head, node.items[1:])
        if not isinstance(head, Atom):
            raise SmtError(f"an application at {_at(node)} whose head is not a symbol")
        if head.text == "let":
            return self._let(node)
        if head.text == "ite":
            return self._ite(node)
        if head.text in OPERATORS:
            return self._apply(head, node.items[1:])
        raise SmtError(f"{self._describe(head.text)} at {_at(head)} is not allowed in Inv{_ALLOWED}")

    def _describe(self, name: str) -> str:
        if name in self.signature.model_symbols:
            return f"the model's symbol {_show(name)}"
        if name in self.params or name in self.signature.constructors or self._bound(name):
            return f"{_show(name)} applied as a function"
        return f"the symbol {_show(name)}"

    def _bound(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _atom(self, node: Atom) -> str:
        name = node.text
        bound = self._bound(name)
        if bound is not None:
            return bound
        if name in self.params:
            return self.params[name]
        if name in ("true", "false"):
            return "Bool"
        if _NUMERAL.match(name):
            return "Int"
        if name in self.signature.constructors:
            return self.signature.constructors[name]
        raise SmtError(f"{self._describe(name)} at {_at(node)} is not allowed in Inv{_ALLOWED}")

    def _apply(self, head: Atom, args: tuple) -> str:
        argument, result, least, most = OPERATORS[head.text]
        if len(args) < least or (most is not None and len(args) > most):
            raise SmtError(f"{head.text} at {_at(head)} takes {least}{'' if most == least else '+'} "
                           f"argument{'s' if least > 1 else ''}, not {len(args)}")
        sorts = [self.sort_of(a) for a in args]
        want = sorts[0] if argument == "same" else argument
        for a, s in zip(args, sorts):
            if s != want:
                raise SmtError(f"argument of {head.text} at {_at(a)} has sort {s}, not {want}")
        return result

    def _tester(self, head: SList, args: tuple) -> str:
        """`((_ is C) x)`: whether x was built by constructor C (Spacer writes these)."""
        parts = head.items
        if not (len(parts) == 3 and all(isinstance(p, Atom) for p in parts) and parts[0].text == "_"
                and parts[1].text == "is" and parts[2].text in self.signature.constructors):
            raise SmtError(f"an application at {_at(head)} whose head is neither a symbol nor a tester (_ is C)")
        sort = self.signature.constructors[parts[2].text]
        if len(args) != 1 or self.sort_of(args[0]) != sort:
            raise SmtError(f"tester (_ is {parts[2].text}) at {_at(head)} takes one argument of sort {sort}")
        return "Bool"

    def _ite(self, node: SList) -> str:
        if len(node.items) != 4:
            raise SmtError(f"ite at {_at(node)} takes 3 arguments")
        test, then, orelse = (self.sort_of(a) for a in node.items[1:])
        if test != "Bool" or then != orelse:
            raise SmtError(f"ill-sorted ite at {_at(node)}: ({test}, {then}, {orelse})")
        return then

    def _let(self, node: SList) -> str:
        if len(node.items) != 3 or not isinstance(node.items[1], SList) or not node.items[1].items:
            raise SmtError(f"malformed let at {_at(node)}")
        scope = {}
        for binding in node.items[1].items:
            if not (isinstance(binding, SList) and len(binding.items) == 2 and isinstance(binding.items[0], Atom)):
                raise SmtError(f"malformed let binding at {_at(binding)}")
            name = binding.items[0]
            self._fresh(name, scope)
            scope[name.text] = self.sort_of(binding.items[1])
        self.scopes.append(scope)
        try:
            return self.sort_of(node.items[2])
        finally:
            self.scopes.pop()

    def _fresh(self, name: Atom, scope: dict) -> None:
        text = name.text
        taken = (text in self.params or text in self.signature.constructors or text in OPERATORS
                 or text in RESERVED or text in self.signature.model_symbols or text in scope
                 or self._bound(text) is not None)
        if taken or not _SYMBOL.match(text) or _NUMERAL.match(text):
            raise SmtError(f"let name {_show(text)} at {_at(name)} is not a fresh symbol")


def print_term(node) -> str:
    """The checked term as text; one-argument `and`/`or` print as their argument."""
    if isinstance(node, Atom):
        return node.text
    if isinstance(node.items[0], SList):
        return "(" + " ".join(print_term(item) for item in node.items) + ")"
    head = node.items[0].text
    if head in ("and", "or") and len(node.items) == 2:
        return print_term(node.items[1])
    if head == "let":
        bindings = " ".join(f"({b.items[0].text} {print_term(b.items[1])})" for b in node.items[1].items)
        return f"(let ({bindings}) {print_term(node.items[2])})"
    return "(" + " ".join(print_term(item) for item in node.items) + ")"
