"""The reference semantics in plain Python: the policy AST, evaluation, the runtime and the conditions; no z3, no I/O."""
