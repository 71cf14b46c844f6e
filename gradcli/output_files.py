"""Files a run writes where the user named them (``--svg``, ``--html``, ``--plot-file``): checked before
anything is computed, and written whole or not at all.

A file is written under a temporary name in its own folder and renamed over the target once complete, so
that a failed or interrupted write (a full disk, ``ulimit -f``, Ctrl-C) leaves the old file as it was, never
a truncated one. The name is refused when it is ``-`` (these options write files, not stdout), a folder, a
symbolic link (renaming would replace the link, writing through it a file the user did not name), or one of
the run's own inputs (``--points p.csv --svg p.csv`` would replace the data with a picture of it).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from typing import IO

from gradcli.errors import ComputeError, UsageError


def check_output_path(path: str) -> str:
    """``path`` as given, once it names a file that can be created or replaced; else a UsageError saying
    why (the option's name is the caller's to add)."""
    if path == "-":
        raise UsageError("'-' is not standard output here: give a file name")
    if not path or path.endswith(os.sep) or os.path.isdir(path):
        raise UsageError(f"{path!r} is a folder: give a file name, e.g. table.svg")
    if os.path.islink(path):
        raise UsageError(f"{path!r} is a symbolic link: give the file itself ({os.path.realpath(path)!r}) "
                         "or another name")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"no folder {folder!r} to write {os.path.basename(path)!r} in")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write in the folder {folder!r}")
    return path


def refuse_inputs(outputs: dict[str, str | None], inputs: Iterable[str | None]) -> None:
    """A UsageError when an output (option -> path) names one of the run's input files, or two outputs
    name one file."""
    named = [(option, path) for option, path in outputs.items() if path is not None]
    for option, path in named:
        for source in inputs:
            if source is not None and source != "-" and _same_file(path, source):
                raise UsageError(f"{option} {path} is the run's own input: writing it would replace that data; "
                                 "give another file name")
    for i, (option, path) in enumerate(named):
        for other, other_path in named[i + 1:]:
            if _same_file(path, other_path):
                raise UsageError(f"{option} and {other} name the same file: give each its own")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: the same name is the same file
        return os.path.abspath(a) == os.path.abspath(b)


def write_whole(path: str, write: Callable[[IO], None], *, binary: bool = False) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it to ``path``: the file is complete or
    untouched. It gets the mode a plain ``open(path, "w")`` would give it (an existing file's; else 0666 less
    the umask). A failure is a ComputeError naming the file."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".part")
    except OSError as exc:
        raise ComputeError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, _mode_for(path))
        with open(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as file:
            write(file)
        os.replace(temporary, path)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ComputeError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def _mode_for(path: str) -> int:
    try:
        info = os.stat(path)
        if stat.S_ISREG(info.st_mode):
            return stat.S_IMODE(info.st_mode)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask
