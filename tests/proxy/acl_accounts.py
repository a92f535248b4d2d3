"""The accounts of the ACL tests against the gRPC endpoint (tests/proxy/test_grpc_acl.py, the Java SDK's
tests/java_sdk/test_java_sdk_acl.py): an admin, and a user who may publish and subscribe anywhere but AclReadOnly."""

from __future__ import annotations

ADMIN = ("RocketMQAdmin", "admin-secret-123")
USER = ("RocketMQUser", "user-secret-456")
ACL = f"""accounts:
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    admin: true
  - accessKey: {USER[0]}
    secretKey: {USER[1]}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
    topicPerms:
      - AclReadOnly=SUB
"""
