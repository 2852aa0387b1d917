"""Type stub of the compiled twin (``_cdelta.pyx``) of the metadata image's partition replay."""

from collections.abc import Mapping
from typing import Any

from kraftwerk.image.model import PartitionRegistration

def partition_from_record(value: Mapping[str, Any], shared: dict[Any, Any] | None = None
                          ) -> PartitionRegistration: ...
