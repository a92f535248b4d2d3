SOURCE_HASH: str

def index_record(
    mm: object,
    props: bytes,
    prefix_hash: int,
    hash_slot_num: int,
    index_num: int,
    entries_base: int,
    index_count: int,
    begin_timestamp: int,
    phy_offset: int,
    store_timestamp: int,
) -> tuple[int, int, int] | None: ...
