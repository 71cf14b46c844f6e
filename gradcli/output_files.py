"""Files a run writes where the user named them (``--svg``, ``--html``, ``--plot-file``): checked before
anything is computed, and written whole or not at all.

A file is written under a temporary name in its own folder and renamed over the target once complete, so
that a failed or interrupted write (a full disk, ``ulimit -f``, Ctrl-C) leaves the old file as it was, never
a truncated one. The name is refused when it is ``-`` (these options write files, not stdout), a folder, a
symbolic link (renaming would replace the link, writing through it a file the user did not name), or one of
the run's own inputs (``--points p.csv --svg p.csv`` would replace the data with a picture of it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
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
            if source is not None and source != "-" and _reads(source, path):
                what = "the run's own input" if _same_file(path, source) else f"among the run's input ({source})"
                raise UsageError(f"{option} {path} is {what}: writing it would change the data the run reads; "
                                 "give another file name")
    for i, (option, path) in enumerate(named):
        for other, other_path in named[i + 1:]:
            if _same_file(path, other_path):
                raise UsageError(f"{option} and {other} name the same file: give each its own")


def _reads(source: str, path: str) -> bool:
    """Whether the input ``source`` (a file, a folder of files, a glob) reads ``path``."""
    if os.path.isdir(source):
        inside = os.path.relpath(os.path.realpath(os.path.abspath(path)), os.path.realpath(source))
        return not inside.startswith(os.pardir)
    if set("*?[") & set(source) and not os.path.exists(source):
        import fnmatch
        import glob

        matches = glob.glob(source, recursive=True)
        return any(_same_file(path, m) for m in matches) or fnmatch.fnmatch(os.path.normpath(path), os.path.normpath(source))
    return _same_file(path, source)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: the same name is the same file
        return os.path.abspath(a) == os.path.abspath(b)


def write_whole(path: str, write: Callable[[IO], None], *, binary: bool = False) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it to ``path``: the file is complete or
    untouched (see :func:`writing_whole`)."""
    with writing_whole(path, binary=binary) as file:
        write(file)


@contextlib.contextmanager
def writing_whole(path: str, *, binary: bool = False,
                  complete: Callable[[BaseException], bool] = lambda exc: False) -> Iterator[IO]:
    """A temporary file beside ``path``, renamed to ``path`` when the block ends, or by an exception that
    ``complete`` accepts (a run that ends with exit 1 after writing all it could); removed otherwise, so
    the file is complete or untouched. It gets the mode a plain ``open(path, "w")`` would give it (an
    existing file's; else 0666 less the umask). A failure to write is a ComputeError naming the file."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".part")
    except OSError as exc:
        raise ComputeError(f"cannot write {path}: {exc.strerror or exc}") from None
    done = False
    try:
        os.fchmod(fd, _mode_for(path))
        with open(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as file:
            try:
                yield file
            except BaseException as exc:
                if not complete(exc):
                    raise
                file.close()
                os.replace(temporary, path)
                done = True
                raise
        os.replace(temporary, path)
        done = True
    except OSError as exc:
        raise ComputeError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if not done:
            try:
                os.unlink(temporary)
            except OSError:
                pass


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
