"""Reading a Python-form policy's text safely: its line table, a pre-scan that bounds nesting, then ast.parse."""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
import warnings

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Loc

from prunecheck.checker.language.bounds import MAX_DEPTH
from prunecheck.checker.language.builder import too_deep_message

MAX_BLANKS = 200
_BLANK_RUN = re.compile(r"[ \t\f\v]{%d,}" % (MAX_BLANKS + 1))


class PythonSource:
    """Line table for converting ast's (line, UTF-8 byte column) positions to 1-based character columns."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.split("\n")
        self._columns = {}  # line number -> byte offset -> character offset, for non-ASCII lines
        self.starts = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1

    def charcol(self, lineno: int, byte_col: int) -> int:
        if not 1 <= lineno <= len(self.lines):
            return max(byte_col, 0)
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        if lineno not in self._columns:
            table = []
            for index, ch in enumerate(line):
                table.extend([index] * len(ch.encode("utf-8", "surrogatepass")))
            table.append(len(line))
            self._columns[lineno] = table
        table = self._columns[lineno]
        return table[min(max(byte_col, 0), len(table) - 1)]

    def loc(self, lineno, byte_col) -> Loc:
        lineno = lineno or 1
        return Loc(lineno, self.charcol(lineno, byte_col or 0) + 1)

    def index(self, lineno, byte_col) -> int:
        if not 1 <= lineno <= len(self.lines):
            return len(self.text)
        return self.starts[lineno - 1] + self.charcol(lineno, byte_col)

    def segment(self, node) -> str:
        """The node's source text, like ast.get_source_segment but without re-splitting the file per call."""
        end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None:
            return ""
        return self.text[self.index(node.lineno, node.col_offset): self.index(end_line, end_col)]

    def loc_at(self, index: int) -> Loc:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= index:
                lo = mid
            else:
                hi = mid - 1
        return Loc(lo + 1, index - self.starts[lo] + 1)


_RUN_CLASSES = {  # operator -> binding rank; a run of one rank at one bracket level is a left-deep chain
    "or": 1,
    "and": 2,
    **{op: 3 for op in ("<", "<=", ">", ">=", "==", "!=", "in", "is")},
    **{op: 4 for op in ("|", "^", "&", "<<", ">>")},
    "+": 5,
    "-": 5,
    **{op: 6 for op in ("*", "/", "//", "%", "@")},
    "**": 7,
    "trailer": 8,  # .name, (call), [subscript] after an operand
}
_SEPARATORS = frozenset((",", ":", ";", "=", ":=", "if", "else", "lambda", "not", "for", "yield", "return", "assert"))
_OPERAND_TYPES = (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)


class _Prescan:
    """The running state of prescan: open brackets, operator chains, unary runs, the busiest logical line."""

    def __init__(self, file: str):
        self.file = file
        self.indent = self.run = self.inline_ifs = self.ops = 0
        self.levels = [{}]  # per open bracket: rank -> length of the current operator chain
        self.worst_ops, self.worst = -1, Loc(1, 1)
        self.line_start = None
        self.after_operand = False

    def fail(self, message, start):
        raise PolicySyntaxError(message, self.file, start[0], start[1] + 1)

    def chain(self, rank, start):
        counts = self.levels[-1]
        for r in [r for r in counts if r > rank]:
            del counts[r]
        counts[rank] = counts.get(rank, 0) + 1
        if counts[rank] > MAX_DEPTH:
            self.fail(too_deep_message(), start)

    def scan(self, text: str) -> None:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, string, start = tok.type, tok.string, tok.start
            if kind in (tokenize.NL, tokenize.COMMENT):
                continue
            if self.line_start is None and kind not in (tokenize.INDENT, tokenize.DEDENT):
                self.line_start = start
            is_op = kind == tokenize.OP or (kind == tokenize.NAME and keyword.iskeyword(string))
            if is_op or kind in (tokenize.INDENT, tokenize.DEDENT):
                self.nesting(kind, string, start, is_op)
            if is_op and string in ("not", "-", "+", "~") and not self.after_operand:
                self.run += 1
                if self.run > MAX_DEPTH:
                    self.fail(f"too many consecutive unary operators (more than {MAX_DEPTH})", start)
            elif kind not in (tokenize.INDENT, tokenize.DEDENT):
                self.run = 0
            if is_op and string == "if":
                self.inline_ifs += 1
                if self.inline_ifs > MAX_DEPTH:
                    self.fail(f"too many conditional expressions in one statement (more than {MAX_DEPTH})", start)
            if is_op and string not in "()[]{},:;":
                self.ops += 1
            self.after_operand = (kind in _OPERAND_TYPES and not is_op) or (is_op and string in ")]}") or (
                string in ("True", "False", "None")
            )
            if kind in (tokenize.NEWLINE, tokenize.ENDMARKER):
                self.end_line()

    def nesting(self, kind, string, start, is_op):
        if kind == tokenize.INDENT:
            self.indent += 1
            if self.indent > MAX_DEPTH:
                self.fail(f"too many levels of indentation (more than {MAX_DEPTH})", start)
        elif kind == tokenize.DEDENT:
            self.indent -= 1
        elif is_op and string in "([{":
            if self.after_operand:
                self.chain(_RUN_CLASSES["trailer"], start)
            self.levels.append({})
            if len(self.levels) - 1 > MAX_DEPTH:
                self.fail(f"too many nested brackets (more than {MAX_DEPTH})", start)
        elif is_op and string in ")]}":
            if len(self.levels) > 1:
                self.levels.pop()
        elif is_op and string == ".":
            self.chain(_RUN_CLASSES["trailer"], start)
        elif is_op and string in _RUN_CLASSES and (self.after_operand or string not in ("+", "-")):
            self.chain(_RUN_CLASSES[string], start)
        elif is_op and string in _SEPARATORS:
            self.levels[-1].clear()

    def end_line(self):
        if self.ops > self.worst_ops and self.line_start is not None:
            self.worst_ops, self.worst = self.ops, Loc(self.line_start[0], self.line_start[1] + 1)
        self.ops = self.inline_ifs = 0
        self.line_start = None
        self.levels = [{}]
        self.after_operand = False


def prescan(text: str, file: str) -> Loc:
    """Bound nesting before ast.parse: brackets, indentation, prefix-operator runs, operator chains.

    Returns the position of the logical line with the most operators (where to blame a parser
    RecursionError/MemoryError).  Tokenizer errors are left for ast.parse to report.
    """
    scan = _Prescan(file)
    try:
        scan.scan(text)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return scan.worst


def parse_module(text: str, file: str):
    """ast.parse the policy text with every failure turned into a PolicySyntaxError; returns (tree, source)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    src = PythonSource(text)
    for number, line in enumerate(src.lines, start=1):
        # Python 3.11's pure-Python tokenizer rescans a run of blanks once per blank: bound the runs first.
        run = _BLANK_RUN.search(line, len(line) - len(line.lstrip(" \t\f\v")))
        if run:
            raise PolicySyntaxError(f"a run of more than {MAX_BLANKS} blanks", file, number, run.start() + 1)
    worst = prescan(text, file)
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for `1if`: policies are not run, stay quiet
            warnings.simplefilter("ignore")
            # A name no file can have: on a SyntaxError CPython re-opens `filename` to quote the line.
            tree = ast.parse(text, filename="<policy>", mode="exec")
    except SyntaxError as exc:  # includes IndentationError and TabError
        line = exc.lineno or 1
        col = exc.offset if exc.offset and exc.offset > 0 else 1
        raise PolicySyntaxError(f"invalid Python: {exc.msg}", file, line, col) from None
    except (RecursionError, MemoryError):
        raise PolicySyntaxError(
            "policy is nested too deeply or is too large to parse", file, worst.line, worst.col
        ) from None
    except ValueError as exc:
        raise PolicySyntaxError(f"invalid Python: {exc}", file, 1, 1) from None
    return tree, src


__all__ = ["MAX_BLANKS", "PythonSource", "parse_module", "prescan"]
