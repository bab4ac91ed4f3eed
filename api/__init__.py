"""prunecheck: vets context-pruning policies a model wrote for itself, before they are deployed."""

__version__ = "0.1.0"
