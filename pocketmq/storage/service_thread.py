"""ServiceThread: RocketMQ's background-service shape (a thread, wakeup, stop) on threading."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class ServiceThread:
    name = "service"

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    @property
    def running(self) -> bool:
        """Started, not shut down, and the caller is not the service's own thread."""
        thread = self._thread
        return thread is not None and not self.stopped and thread is not threading.current_thread()

    def start(self) -> None:
        self._stopped.clear()
        self._thread = threading.Thread(target=self._main, name=f"pocketmq-{self.name}", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.run()
        except Exception:  # a dying service must say so; the store keeps serving what it can
            log.exception("%s stopped on an error", self.name)

    def wakeup(self) -> None:
        if not self._wake.is_set():
            self._wake.set()

    def wait_for_running(self, interval: float) -> None:
        """Sleep up to `interval`, returning early on wakeup() or shutdown."""
        self._wake.wait(interval)
        self._wake.clear()

    def run(self) -> None:
        raise NotImplementedError

    def survive(self, round_: Callable[..., object], *args: object) -> None:
        """One round of a periodic service, whose failure is logged and does not end the service: a file deleted
        under a flush or a clean round (a topic deleted, the clean service) fails that round only."""
        try:
            round_(*args)
        except Exception:
            log.exception("%s: a round failed; going on", self.name)

    def shutdown(self, join_timeout: float = 10.0) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(join_timeout)
        self._thread = None
