"""One walker over the policy expression tree: a method per node type, found through a table that must be complete."""

from __future__ import annotations

from prunecheck.spec.policy import NODE_TYPES


def handler_name(node_type: type) -> str:
    """The method that handles node_type: `Num` -> `num`, `BoolLit` -> `bool_lit`, `InSet` -> `in_set`."""
    name = node_type.__name__
    return "".join(f"_{ch.lower()}" if ch.isupper() and i else ch.lower() for i, ch in enumerate(name))


class Walker:
    """Dispatch by node type: `visit(node, *args)` calls the subclass's handler for type(node) with node and args.

    A subclass must define a handler for every type in NODE_TYPES, or defining the class raises TypeError (pass
    `partial=True` for a base that leaves some to its own subclasses): a new node type cannot go unhandled.
    """

    handlers: dict = {}

    def __init_subclass__(cls, partial: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        found = {t: getattr(cls, handler_name(t), None) for t in NODE_TYPES}
        missing = [handler_name(t) for t, handler in found.items() if not callable(handler)]
        if missing and not partial:
            raise TypeError(f"walker {cls.__name__} has no handler {', '.join(missing)}")
        cls.handlers = {t: handler for t, handler in found.items() if callable(handler)}

    def visit(self, node, *args):
        handler = self.handlers.get(type(node))
        if handler is None:
            return self.inherited(node, *args)
        return handler(self, node, *args)

    def inherited(self, node, *args):
        """A subclass of a node type is handled as that node type (as isinstance would); anything else is unknown."""
        for base in type(node).__mro__[1:]:
            if base in self.handlers:
                return self.handlers[base](self, node, *args)
        return self.unknown(node, *args)

    def unknown(self, node, *args):
        """What a value that is not a node of spec/policy.py meets; walkers raise their own error here."""
        raise TypeError(f"not a policy expression: {type(node).__name__}")


class MemoWalker(Walker, partial=True):
    """A walker that computes each (node, *args) once per instance: equal subexpressions get the same result object."""

    def __init__(self):
        self.memo: dict = {}

    def walk(self, node, *args):
        key = (node, *args)
        if key not in self.memo:
            self.memo[key] = self.visit(node, *args)
        return self.memo[key]
