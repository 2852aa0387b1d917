"""Type stub of the compiled twin (``_ccodec.pyx``) of the protocol codec's decoders."""

import uuid
from collections.abc import Callable
from typing import Any

class Decoder:
    def __call__(self, buf: bytes, pos: int, end: int, /) -> tuple[dict[str, Any], int]: ...

def decoder(plan: tuple[Any, ...], uuid_of: Callable[[bytes], uuid.UUID], unknown: str) -> Decoder: ...

class FrameDecoder:
    def __call__(self, data: bytes, /) -> Any: ...

def frame_decoder(record_type: type[Any], known: Callable[[int, int], tuple[Any, Any] | None],
                  pure: Callable[[bytes], Any]) -> FrameDecoder: ...
