"""Writing output files safely: an existing file is replaced only when asked (the command
lines' ``--force``), and a file is written beside its destination under a temporary name, then
renamed over it, so that a write that fails half-way never replaces a good file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator


class OutputExists(FileExistsError):
    """An output file exists and replacing it was not asked for."""


def refuse_existing(paths, force: bool) -> None:
    """Raise :class:`OutputExists` naming the first of ``paths`` (``None`` entries skipped) that
    exists, unless ``force``; a path that is a directory is refused whatever ``force``."""
    for p in paths:
        if p is None:
            continue
        if os.path.isdir(p):
            raise OutputExists(f"the output {p} is a directory; give a file path")
        if os.path.exists(p) and not force:
            raise OutputExists(f"{p} exists; give --force to replace it, or another path")


@contextlib.contextmanager
def replace_atomically(path) -> Iterator[str]:
    """Yield a temporary path beside ``path`` (same folder, same extension, so that writers that
    pick a format by extension still do); when the block ends without error the temporary file
    is renamed to ``path`` (atomic on POSIX and Windows), otherwise it is removed and ``path``
    is left as it was."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{base}.tmp-", suffix=os.path.splitext(base)[1])
    os.close(fd)
    try:
        # mkstemp makes the file private (0600): give it the mode a plain open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
