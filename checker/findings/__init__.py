"""Findings: what a replayed counterexample did to the edit/record graph, explained and drawn."""
