"""Policy text as read: regular files only, UTF-8 decoding, and the line table every position counts by."""

from __future__ import annotations

import bisect
import os
import re
import stat
from pathlib import PurePath
from typing import Tuple

from prunecheck.spec.errors import PolicySyntaxError

from prunecheck.checker.language.typecheck import MAX_FILE_BYTES

EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".py": "python"}
BREAKS = {
    "yaml": re.compile("\r\n|[\r\n\x85\u2028\u2029]"),
    "json": re.compile("\r\n|[\r\n]"),
    "python": re.compile("\r\n|[\r\n]"),
}


class SourceText:
    """The decoded file with a line table; positions are 1-based (line, character column)."""

    def __init__(self, text: str, file: str, form: str):
        self.text = text
        self.file = file
        self.form = form
        self.starts = [0] + [m.end() for m in BREAKS.get(form, BREAKS["yaml"]).finditer(text)]

    def pos(self, index: int) -> Tuple[int, int]:
        index = max(0, min(index, len(self.text)))
        line = bisect.bisect_right(self.starts, index) - 1
        return line + 1, index - self.starts[line] + 1

    def fail(self, message: str, index: int):
        raise PolicySyntaxError(message, self.file, *self.pos(index))

    def fail_at(self, message: str, node):
        self.fail(message, node.start_mark.index)

    def lines(self) -> tuple:
        """The lines as every position counts them, line breaks removed (no line after a final break)."""
        ends = self.starts[1:] + [len(self.text)]
        line_break = re.compile(f"(?:{BREAKS.get(self.form, BREAKS['yaml']).pattern})\\Z")
        lines = [line_break.sub("", self.text[start:end]) for start, end in zip(self.starts, ends)]
        return tuple(lines[:-1] if len(lines) > 1 and not lines[-1] else lines)


def position_in(prefix: str) -> Tuple[int, int]:
    """(line, col) just after prefix."""
    starts = [0] + [m.end() for m in BREAKS["yaml"].finditer(prefix)]
    return len(starts), len(prefix) - starts[-1] + 1


def form_of(filename: str) -> str:
    """yaml, json or python, by the file name's extension; any other is a PolicySyntaxError."""
    suffix = PurePath(filename).suffix.lower()
    form = EXTENSIONS.get(suffix)
    if form is None:
        shown = f"`{suffix}`" if suffix else "no extension"
        raise PolicySyntaxError(
            f"unsupported policy file type ({shown}): expected .yaml, .yml, .json or .py", filename, 1, 1
        )
    return form


def read_policy_file(path, what: str = "policy") -> Tuple[bytes, str]:
    """(at most MAX_FILE_BYTES + 1 bytes, the file name) of a regular file; any failure is a PolicySyntaxError that
    says which kind of file (`what`: policy, deployment, configuration) could not be read."""
    try:
        filename = os.fspath(path)
    except TypeError:
        raise PolicySyntaxError(f"not a file path: {type(path).__name__}", "<policy>", 1, 1) from None
    if isinstance(filename, bytes):
        filename = os.fsdecode(filename)
    try:
        # Opening a FIFO or a device can block forever: only regular files are policies.
        if os.path.exists(filename) and not os.path.isdir(filename) and not stat.S_ISREG(os.stat(filename).st_mode):
            raise PolicySyntaxError(f"cannot read {what}: not a regular file", filename, 1, 1)
        with open(filename, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise PolicySyntaxError(f"cannot read {what}: it is a directory", filename, 1, 1) from None
    except FileNotFoundError:
        raise PolicySyntaxError(f"cannot read {what}: no such file", filename, 1, 1) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PolicySyntaxError(f"cannot read {what}: {reason}", filename, 1, 1) from None
    return data, filename


def _text_of(data: str, filename: str) -> str:
    try:
        size = len(data.encode("utf-8"))
    except UnicodeEncodeError as exc:
        line, col = position_in(data[: exc.start])
        raise PolicySyntaxError("text is not valid Unicode (lone surrogate)", filename, line, col) from None
    if size > MAX_FILE_BYTES:
        raise PolicySyntaxError(f"policy file is too large: {size} bytes (at most {MAX_FILE_BYTES})", filename, 1, 1)
    return data


def _decoded(data: bytes, filename: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise PolicySyntaxError(f"policy file is too large: more than {MAX_FILE_BYTES} bytes", filename, 1, 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        nul = data.find(b"\x00", 0, exc.start)
        if nul < 0:
            line, col = position_in(data[: exc.start].decode("utf-8"))
            raise PolicySyntaxError(
                f"file is not valid UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded", filename, line, col
            ) from None
        return data[:nul].decode("utf-8") + "\x00"


def decode_policy_bytes(data, filename: str) -> str:
    """UTF-8 text of a policy (BOM removed), refusing oversize, undecodable, NUL-holding or empty input."""
    if isinstance(data, str):
        text = _text_of(data, filename)
    elif isinstance(data, (bytes, bytearray, memoryview)):
        text = _decoded(bytes(data), filename)
    else:
        raise PolicySyntaxError(f"policy must be text or bytes, got {type(data).__name__}", filename, 1, 1)
    nul = text.find("\x00")
    if nul >= 0:
        line, col = position_in(text[:nul])
        raise PolicySyntaxError("file contains a NUL byte", filename, line, col)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise PolicySyntaxError("policy file is empty", filename, 1, 1)
    return text


def display_name(path) -> str:
    """path as a string for messages, whatever it is."""
    try:
        return os.fsdecode(os.fspath(path))
    except Exception:
        return "<policy>"


__all__ = ["BREAKS", "EXTENSIONS", "SourceText", "decode_policy_bytes", "display_name", "form_of", "position_in",
           "read_policy_file"]
