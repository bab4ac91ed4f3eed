"""Theorems about the model, one per module; THEOREMS lists them in the order `prunecheck prove` runs them."""

from prunecheck.proofs import absence, atomic_refusal, host_budget, lattice, reversible, self_pins, separation

THEOREMS = (separation, self_pins, host_budget, reversible, lattice, absence, atomic_refusal)
