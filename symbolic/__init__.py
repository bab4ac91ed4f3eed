"""The formal model as z3 terms: the unrolled model, step templates, candidate lemmas, the pair model, the solver."""
