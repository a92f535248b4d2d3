"""RunningFlags: why the store refuses writes (bits as in RocketMQ's RunningFlags)."""

NOT_READABLE_BIT = 0x1
NOT_WRITEABLE_BIT = 0x2
WRITE_LOGICS_QUEUE_ERROR_BIT = 0x4
WRITE_INDEX_FILE_ERROR_BIT = 0x8
DISK_FULL_BIT = 0x10

_WRITE_BLOCKERS = NOT_WRITEABLE_BIT | WRITE_LOGICS_QUEUE_ERROR_BIT | WRITE_INDEX_FILE_ERROR_BIT | DISK_FULL_BIT


class RunningFlags:
    __slots__ = ("flag",)

    def __init__(self) -> None:
        self.flag = 0

    def is_writeable(self) -> bool:
        return not self.flag & _WRITE_BLOCKERS

    def is_disk_full(self) -> bool:
        return bool(self.flag & DISK_FULL_BIT)

    def make_disk_full(self) -> None:
        self.flag |= DISK_FULL_BIT

    def make_disk_ok(self) -> None:
        self.flag &= ~DISK_FULL_BIT

    def make_logics_queue_error(self) -> None:
        self.flag |= WRITE_LOGICS_QUEUE_ERROR_BIT

    def clear_logics_queue_error(self) -> None:
        self.flag &= ~WRITE_LOGICS_QUEUE_ERROR_BIT

    def why_not_writeable(self) -> str:
        if self.flag & DISK_FULL_BIT:
            return "the disk is full: the store refuses writes until cleanup frees space"
        if self.flag & WRITE_LOGICS_QUEUE_ERROR_BIT:
            return ("a consume queue could not be written: the store refuses writes until dispatch works again, "
                    "so that it never acknowledges a message it cannot make pullable")
        if self.flag & WRITE_INDEX_FILE_ERROR_BIT:
            return "an index file could not be written"
        return "the store is not writeable"
