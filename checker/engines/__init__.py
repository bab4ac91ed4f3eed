"""The engines: bounded search, induction with Houdini lemmas, Spacer, the explicit-state oracle, certificates."""
