"""The error hierarchy: one root, one subclass per phase."""

from __future__ import annotations


class PrunecheckError(Exception):
    """Root of every error prunecheck raises on purpose."""

    def one_line(self) -> str:
        return " ".join(str(self).split())


class PolicySyntaxError(PrunecheckError):
    """The policy text is not a well-formed, well-typed policy."""

    def __init__(self, message: str, file: str = "<policy>", line: int = 1, col: int = 1):
        self.message = " ".join(message.split())
        self.file = file
        self.line = line
        self.col = col
        super().__init__(f"{file}:{line}:{col}: {self.message}")


class EncodingError(PrunecheckError):
    """A parsed policy or model could not be turned into solver terms."""


class SolverUnknown(PrunecheckError):
    """The solver answered neither sat nor unsat within its limits."""


class ReplayMismatch(PrunecheckError):
    """A symbolic counterexample did not reproduce on the reference runtime: a checker bug."""


class TraceFormatError(PrunecheckError):
    """A trace file is not a trace this version can replay."""


class MergeRequired(PrunecheckError):
    """An undo's record is stale (its target was re-edited): the undo is a merge, a new edit, not a revert."""


class IrreversibleEditError(PrunecheckError):
    """An edit's recovery record is absent, so the edit cannot be undone."""


class Interrupted(PrunecheckError):
    """A SIGINT or SIGTERM stopped the run: nothing it was computing is reported (exit code 130)."""


class OutputPathError(PrunecheckError):
    """An output option names a path that cannot be written (exit code 2)."""
