"""The policy language: the expression parser, the restricted-Python form, type checking, printing, loading."""
