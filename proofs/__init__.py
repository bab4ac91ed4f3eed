"""Theorems about the model, one per module; THEOREMS lists them in the order `prunecheck prove` runs them."""

from prunecheck.proofs import absence, host_budget, lattice, reversible, self_pins, separation
from prunecheck.proofs import downgrade

THEOREMS = (separation, self_pins, host_budget, reversible, lattice, absence, downgrade)
