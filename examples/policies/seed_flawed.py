"""The first seed's observed policy, in the restricted Python form."""

NAME = "seed-recency-frequency-py"
DEPLOYMENT = {"records": "window", "pins": "self", "audit": "policy"}
EXPECT = {"C1": "violated", "C2": "violated", "C3": "holds", "C4": "violated", "P1": "holds", "R1": "holds", "T1": "violated", "M1": "violated", "A1": "holds", "J1": "violated"}


def evict(span, window):
    if span.pinned:
        return False
    return span.recency * span.frequency < 0.25
