"""Writing a journal: one record per line, appended and flushed as the search runs.

Every record is one ``write`` of one line, flushed at once, so a ``kill -9`` at any moment
leaves the lines written before it whole; at most the last is torn, and a reader drops it.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Mapping
from datetime import datetime

from hypersched_nb._json import plain
from hypersched_nb.experiment._records import RecordKind
from hypersched_nb.experiment.journal._format import FORMAT, Journal, JournalError, journal_url
from hypersched_nb.runtime.checkpoint import private_folders

__all__ = ["JournalWriter", "check_unused"]


def check_unused(folder: str | os.PathLike) -> None:
    """Refuse to start a new search in ``folder`` if a search's journal is there already:
    both would write to one journal, and the new one's checkpoints would overwrite the
    old's (trial ids start at 0 in each)."""
    import fsspec

    url = journal_url(folder)
    fs, path = fsspec.core.url_to_fs(url)
    if fs.exists(path):
        raise JournalError(
            f"checkpoint_dir {os.fspath(folder)!r} holds another search's journal already: "
            f"go on with it with Experiment.resume({os.fspath(folder)!r}), or give this "
            "search a checkpoint_dir of its own"
        )


class JournalWriter:
    """Appends records to the journal at ``url`` (made if missing; on a local disk, a file
    only its owner can read), each as one line, flushed. While ``muted`` (a resumed search
    fed its own journal again) nothing is written."""

    def __init__(self, url: str, *, muted: bool = False):
        import fsspec
        from fsspec.implementations.local import LocalFileSystem

        fs, path = fsspec.core.url_to_fs(url)
        self.url = url
        self.muted = muted
        self._lock = threading.Lock()
        if isinstance(fs, LocalFileSystem):
            private_folders(os.path.dirname(path))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._file = os.fdopen(fd, "ab", buffering=0)
        else:
            fs.makedirs(path.rpartition("/")[0], exist_ok=True)
            self._file = fs.open(path, "ab")

    @classmethod
    def begin(cls, url: str, *, started: datetime, settings: Mapping) -> JournalWriter:
        """A new journal whose first line describes the search."""
        writer = cls(url)
        writer.write(
            {"k": RecordKind.SEARCH, "format": FORMAT, "id": uuid.uuid4().hex,
             "started": started.isoformat(), "settings": dict(settings)}
        )  # fmt: skip
        return writer

    @classmethod
    def after(cls, journal: Journal, *, muted: bool = True) -> JournalWriter:
        """A writer that goes on with ``journal``: a search resumed, muted while it is fed
        its journal again (the replay unmutes it where it goes live). If its last line was torn (the search was killed
        while writing it), what there is of it is cut off first, so that the next record
        begins a line of its own."""
        if journal.torn:
            _cut_after_last_line(journal.url)
        return cls(journal.url, muted=muted)

    def write(self, record: Mapping) -> None:
        if self.muted:
            return
        line = json.dumps(record, default=plain, separators=(",", ":")) + "\n"
        with self._lock:
            self._file.write(line.encode("utf-8"))
            self._file.flush()

    def end(self, record: Mapping) -> None:
        """Write the last record, then close the file, whether or not the write failed (a
        full disk leaves the journal as it was, cut short)."""
        try:
            self.write(record)
        except OSError:
            pass  # the journal stays cut short: opened, it reads as interrupted
        finally:
            self.close()

    def close(self) -> None:
        with self._lock:
            try:
                self._file.close()
            except OSError:
                pass  # nothing more can be written to it either way


def _cut_after_last_line(url: str) -> None:
    """Drop what follows the last newline of the file at ``url``."""
    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    fs, path = fsspec.core.url_to_fs(url)
    data = fs.cat_file(path)
    whole = data[: data.rfind(b"\n") + 1]
    if isinstance(fs, LocalFileSystem):  # in place
        os.truncate(path, len(whole))
    else:
        fs.pipe_file(path, whole)
