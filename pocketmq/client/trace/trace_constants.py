"""TraceConstants: the trace format's separators and names."""

from __future__ import annotations

CONTENT_SPLITOR = "\u0001"  # between the fields of one record
FIELD_SPLITOR = "\u0002"  # after each record
GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER-"  # the group of the producer that writes a client's trace records
