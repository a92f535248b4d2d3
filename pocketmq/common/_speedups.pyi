from collections.abc import Callable

SOURCE_HASH: str

def decode_records(
    buf: bytes,
    offset: int,
    slow_bits: int,
    out: list[object],
    cls: Callable[..., object],
    unpack_host: Callable[[bytes], str],
    extra: str,
    sep_extra: str,
) -> int: ...
