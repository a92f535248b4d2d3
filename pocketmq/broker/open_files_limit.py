"""raise_open_files_limit: what RocketMQ's start scripts do with ulimit, for a broker started in Python."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def raise_open_files_limit() -> None:
    """Raise the soft RLIMIT_NOFILE to the hard limit, as RocketMQ's start scripts do with ulimit: a broker
    holds a descriptor per connection and per mapped store file (the store keeps the mapped consume-queue
    files under half the soft limit, see ConsumeQueueLru)."""
    try:
        import resource
    except ImportError:  # (Windows)
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        # (an unlimited hard limit: Linux still caps descriptors at nr_open, 1,048,576 by default)
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            log.info("raised the open files limit from %d to %d", soft, target)
    except (OSError, ValueError) as e:
        log.warning("cannot raise the open files limit: %s", e)
