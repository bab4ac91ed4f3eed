"""The reference runtime and the formal model of a self-editing context window."""
