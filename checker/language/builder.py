"""Building policy AST nodes within the node-count and depth bounds: shared by both front ends."""

from __future__ import annotations

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Binary, BoolLit, EnumLit, Loc, Num, Unary

from prunecheck.checker.language.bounds import MAX_DEPTH, MAX_NODES


class Builder:
    """Creates AST nodes while enforcing the node-count and depth bounds (shared by both front ends)."""

    def __init__(self, file: str, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH):
        self.file = file
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.nodes = 0
        self._depth = {}  # id(node) -> (depth, node); holding node keeps the id unique

    def depth(self, node) -> int:
        entry = self._depth.get(id(node))
        return entry[0] if entry else 1

    def make(self, cls, *args, loc: Loc, children=()):
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise PolicySyntaxError(
                f"policy is too large: more than {self.max_nodes} expression nodes", self.file, loc.line, loc.col
            )
        depth = 1 + max((self.depth(c) for c in children), default=0)
        if depth > self.max_depth:
            raise PolicySyntaxError(too_deep_message(self.max_depth), self.file, loc.line, loc.col)
        node = cls(*args, loc=loc)
        self._depth[id(node)] = (depth, node)
        return node

    def chain_comparisons(self, operands, ops):
        """operands[0] op0 operands[1] op1 ... -> (a op0 b) and (b op1 c) and ..., left-folded."""
        result = None
        for k, (op, loc) in enumerate(ops):
            cmp = self.make(Binary, op, operands[k], operands[k + 1], loc=loc, children=(operands[k], operands[k + 1]))
            result = cmp if result is None else self.make(Binary, "and", result, cmp, loc=loc, children=(result, cmp))
        return result


def too_deep_message(limit: int = MAX_DEPTH) -> str:
    return (
        f"expression is nested too deeply: more than {limit} levels "
        "(each operator in a chain like a + b + c adds a level)"
    )


def is_literal(node) -> bool:
    if isinstance(node, (Num, BoolLit, EnumLit)):
        return True
    return isinstance(node, Unary) and node.op == "-" and isinstance(node.arg, Num)


__all__ = ["Builder", "is_literal", "too_deep_message"]
