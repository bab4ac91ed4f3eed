"""Output paths: which options write where, whether a path can be written, and write failures as one-line errors."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path
from typing import Optional, Union

from prunecheck.spec.errors import OutputPathError
from prunecheck.symbolic.interrupts import stop_if_interrupted

# (command, argparse dest) -> (the option as typed, what it names). A directory is created with its parents if
# missing; a file is overwritten if it exists, and its directory must exist.
OUTPUT_OPTIONS = {
    ("check", "out"): ("--out", "directory"),
    ("check", "emit_pytest"): ("--emit-pytest", "directory"),
    ("check", "write_baseline"): ("--write-baseline", "file"),
    ("check", "python"): ("--python", "directory"),
    ("graph", "out"): ("--out", "file"),
    ("repair", "out"): ("--out", "file"),
}


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _existing_problem(path: Path, kind: str) -> Optional[str]:
    if not path.exists():
        return "is a broken symbolic link"
    if kind == "directory" and not path.is_dir():
        return "exists and is not a directory"
    if kind == "file" and path.is_dir():
        return "is a directory"
    if kind == "file" and not path.is_file():  # writing into a FIFO would wait for a reader
        return "exists and is not a regular file"
    if not os.access(path, os.W_OK | (os.X_OK if kind == "directory" else 0)):
        return "is not writable"
    return None


def _probe(directory: Path, make_directory: bool) -> Optional[str]:
    """Create and remove a scratch file (or directory) in `directory`: access() says yes to root everywhere, also
    where the file system refuses every write (sysfs, a read-only bind mount)."""
    try:
        if make_directory:
            os.rmdir(tempfile.mkdtemp(prefix=".prunecheck-probe-", dir=directory))
        else:
            handle, name = tempfile.mkstemp(prefix=".prunecheck-probe-", dir=directory)
            os.close(handle)
            os.unlink(name)
    except OSError as exc:
        return f"{directory} is not writable ({exc.strerror or exc})"
    return None


def output_problem(path: Path, kind: str) -> Optional[str]:
    """Why `path` cannot be written as a `kind` ("directory" or "file", as in OUTPUT_OPTIONS), or None."""
    if "\x00" in str(path):
        return "contains a NUL character"
    try:
        if os.path.lexists(path):
            return _existing_problem(path, kind) or (_probe(path, False) if kind == "directory" else None)
        anchor = _nearest_existing(path)
        if not anchor.is_dir():
            return f"{anchor} is not a directory"
        if kind == "file" and anchor != path.parent:
            return f"its directory {path.parent} does not exist"
        if not os.access(anchor, os.W_OK | os.X_OK):
            return f"{anchor} is not writable"
        return _probe(anchor, kind == "directory")
    except OSError as exc:  # a name too long, a directory we may not search
        return exc.strerror or str(exc)


def check_output_paths(args) -> None:
    """Raise OutputPathError for the first output option of args.command that names a path it cannot write."""
    for (command, dest), (option, kind) in OUTPUT_OPTIONS.items():
        value = getattr(args, dest, None) if args.command == command else None
        problem = None if value is None else output_problem(Path(value), kind)
        if problem:
            raise OutputPathError(f"{option} {value}: {problem}")


def cache_warning(args, default_dir: Path) -> Optional[str]:
    """Why the report cache directory cannot be written, as a warning (the check then runs without it), or None."""
    if args.no_cache:
        return None
    directory = args.cache if args.cache is not None else default_dir
    problem = output_problem(Path(directory), "directory")
    if problem is None:
        return None
    name = f"--cache {directory}" if args.cache is not None else f"cache directory {directory}"
    return f"{name}: {problem}; checking without the cache"


@contextlib.contextmanager
def writing(option: str, path):
    """Report a write that fails after the up-front check (a full disk, a race) as an OutputPathError."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputPathError(f"{option} {path}: {exc.strerror or exc}") from None


def write_whole(path, data: Union[str, bytes]) -> None:
    """Write path whole or not at all (a temporary file beside it, renamed over it), and never once the run is
    interrupted: an interrupted run leaves no partial file. Through a symbolic link, its target is written."""
    stop_if_interrupted()
    path = Path(os.path.realpath(path))
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
