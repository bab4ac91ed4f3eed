"""The commands beyond check: batch vetting, repair, diff, graph, reproduce and schema, and what they share."""
