"""What a clean shutdown leaves for the next start to check: the consume queues and index files it had.

After a crash the store re-dispatches from the checkpoint, which rebuilds what is missing; after a clean stop it
trusts the files it finds, so a consume-queue file or an index directory lost meanwhile used to stay lost. The
manifest (``dispatch_manifest.json`` in the store root) lists, for every queue, the offset its first file starts
at and where its entries end, and the index files' names; the next clean start compares the files against it
(DefaultMessageStore._verify_against_manifest) and rebuilds what is missing from the commit log. The start
removes it once the rebuild is done and the abort file is written: only a clean shutdown writes one, so it never
describes an older state than the files; and a start killed in the middle of the rebuild finds it again (without
the abort file, nothing else would say what was still missing).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any

log = logging.getLogger(__name__)

NAME = "dispatch_manifest.json"


def write_manifest(root: str, queues: dict[tuple[str, int], tuple[int, int]], index_files: list[str]) -> None:
    """queues: (topic, queue id) -> (first file's offset, end of entries), in bytes."""
    data: dict[str, Any] = {
        "queues": [[topic, qid, first, end] for (topic, qid), (first, end) in sorted(queues.items())],
        "index": index_files,
    }
    path = os.path.join(root, NAME)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:  # the next clean start then only checks what it can without it
        log.warning("cannot write %s: %s", path, e)
        with contextlib.suppress(OSError):
            os.unlink(path)


def read_manifest(root: str) -> tuple[dict[tuple[str, int], tuple[int, int]], list[str]] | None:
    """The manifest; None when there is none (or it is unreadable)."""
    path = os.path.join(root, NAME)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        queues = {(str(t), int(q)): (int(first), int(end)) for t, q, first, end in data["queues"]}
        index = [str(n) for n in data["index"]]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("ignoring %s: %s", path, e)
        return {}, []
    return queues, index


def drop_manifest(root: str) -> None:
    """Remove the manifest: the store now runs, and its files will change."""
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(root, NAME))
