"""Theorems about the model, one per module; THEOREMS lists them in the order `prunecheck prove` runs them."""

from . import absence, lattice, reversible, self_pins, separation

THEOREMS = (separation, self_pins, reversible, lattice, absence)
