"""The table of example policies with expected verdicts that every engine is run against."""

from prunecheck.checker.language.loader import expected_verdicts

from conftest import EXAMPLES

INLINE = {
    # A policy whose C1 violation lies beyond the default depth: it may never be reported `holds` (its C2 violation,
    # truncation at a host budget, is found within 3 steps).
    "late_violation.yaml": (
        "name: late-violation\n"
        "evict: kind == 'record' and age > 20\n"
        "deployment: {records: window, pins: self}\n",
        {"C1": "violated", "C2": "violated", "C3": "holds", "C4": "holds", "P1": "holds"},
    ),
}


def example_table():
    """(id, path or None, source text or None, expected {condition: verdict})."""
    rows = [(path.name, path, None, expected_verdicts(path)) for path in sorted(EXAMPLES.iterdir())]
    rows += [(name, None, text, expected) for name, (text, expected) in INLINE.items()]
    return rows
