"""MQVersion: the ordinals of RocketMQ's ``Version`` enum that a broker compares a client's version with (a client
sends its ordinal in every request's ``version``), and getVersionDesc for the versions older than the newest of
them, which a refusal names."""

from __future__ import annotations

V3_0_7_SNAPSHOT = 28  # from here on a client answers GET_CONSUMER_STATUS_FROM_CLIENT and takes offset resets
V3_1_8_SNAPSHOT = 62  # from here on a client answers GET_CONSUMER_RUNNING_INFO
V3_4_9 = 121  # from here on a send header's maxReconsumeTimes counts
V4_9_3 = 399  # up to here the ACL signs a query by key without UNIQUE_MSG_QUERY_FLAG (Apache 5.x's rule)
V4_9_4 = 401  # from here on a client reads standard JSON routes
V4_9_8 = 409  # the version pocketmq speaks as, and sends
V5_0_0 = 413  # from here on a client reads a queue's pullOffset in consume stats

# Ordinals 0 to 61: the 3.0.0 pre-releases, then a snapshot and a release of each 3.0.x and 3.1.x up to 3.1.7.
_BEFORE_V3_1_8 = (
    *(f"V3_0_0_{stage}" for stage in (
        "SNAPSHOT", "ALPHA1", "BETA1", "BETA2", "BETA3", "BETA4", "BETA5", "BETA6_SNAPSHOT", "BETA6",
        "BETA7_SNAPSHOT", "BETA7", "BETA8_SNAPSHOT", "BETA8", "BETA9_SNAPSHOT", "BETA9", "FINAL")),
    *(name for minor, patches in ((0, range(1, 16)), (1, range(8))) for patch in patches
      for name in (f"V3_{minor}_{patch}_SNAPSHOT", f"V3_{minor}_{patch}")),
)


def version_desc(version: int) -> str:
    """MQVersion.getVersionDesc of a version older than V3_1_8_SNAPSHOT; any other version as its number (the
    remarks that name a version name only the old ones)."""
    if 0 <= version < len(_BEFORE_V3_1_8):
        return _BEFORE_V3_1_8[version]
    return str(version)
