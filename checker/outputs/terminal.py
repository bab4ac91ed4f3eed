"""Text made safe for a reviewer's terminal: policy text reaches the output in names and error messages."""

from __future__ import annotations

import unicodedata

from prunecheck.symbolic.interrupts import stop_if_interrupted


def terminal_safe(text: str) -> str:
    """Escape what could rewrite a reviewer's terminal: control characters other than newline, format characters
    (bidi overrides, zero-width) and line separators. Policy text reaches the output in names and error messages."""
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch != "\n" and (category in ("Cc", "Cf", "Zl", "Zp", "Cs") or category == "Co"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


class SafeStream:
    """A text stream that escapes terminal-unsafe characters on the way out; `gated`: nothing more is written once
    the run is interrupted (Interrupted instead), so an interrupt never shapes what it prints."""

    def __init__(self, stream, gated: bool = False):
        self.stream = stream
        self.gated = gated

    def write(self, text: str) -> int:
        if self.gated:
            stop_if_interrupted()
        return self.stream.write(terminal_safe(text))

    def flush(self) -> None:
        self.stream.flush()
