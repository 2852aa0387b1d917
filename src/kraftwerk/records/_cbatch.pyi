"""Type stub of the compiled twin (``_cbatch.pyx``) of the records layer's hot loops."""

from collections.abc import Callable, Iterator

from kraftwerk.records.types import Record

def decode_v2(buf: bytes | bytearray | memoryview, count: int, base_offset: int, base_ts: int,
              lat: int | None, where: int) -> Iterator[Record]: ...
def upconvert_message(data: bytes | bytearray | memoryview, pos: int, size: int, magic: int,
                      check_crc: bool) -> bytes | None: ...
def fill_bytes(capacity: int, write: Callable[[memoryview], int]) -> bytes: ...
