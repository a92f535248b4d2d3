from collections.abc import Mapping

from .command import RemotingCommand

SOURCE_HASH: str

def configure(
    command_type: type[RemotingCommand],
    language_codes: dict[str, int],
    language_names: dict[int, str],
    serialize_json: object,
) -> None: ...
def decode_json_header(data: object) -> RemotingCommand | None: ...
def encode_json_header(cmd: object) -> bytes | None: ...
def ext_values(
    ext: Mapping[str, object], specs: tuple[tuple[str, int, bool, object, object], ...]
) -> tuple[object, ...] | None: ...
