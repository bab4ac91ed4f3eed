"""Theorems about the model, one per module; THEOREMS lists them in the order `prunecheck prove` runs them."""

from prunecheck.proofs import (absence, append_only, atomic_refusal, downgrade, host_budget, lattice, merge, reversible,
                               self_pins, separation, tombstones)

from prunecheck.checker.commands.claims import register_theorems

THEOREMS = (separation, self_pins, host_budget, reversible, lattice, absence, tombstones, append_only, merge,
            atomic_refusal, downgrade)
register_theorems(THEOREMS)  # the claim table derives the statuses of claims backed by theorems from their labels
