"""The attack table: from the attacker's seat (an `sts:AssumeRole` of the deploy role and of an administrator role
without break-glass), each protected action on the replica; every one must be denied, and the denying layer is read
from AWS's error message. Break-glass then does what the kit says it may (the same retention, the same policy, an
untag of a key the table does not carry, and the promotion of the throwaway replica is done by the run itself).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.infra.live.plan import RUN_TAG

LAYER_RE = re.compile(r"with an explicit deny in an? ([a-z -]+?policy)")
SHORT_RETENTION = {
    "status": "enabled",
    "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 1}},
}
OPEN_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3tables:*", "Resource": "*"}],
}


# Locked after the first deploy (docs/decisions/0028-lock-after-first-deploy.md): the deploy role may change nothing
# protective on a replica, its table policy included; every attack below is denied to it and to the admin role.
DEPLOY_MAY: set[tuple[str, str]] = set()


@dataclass
class Attack:
    principal: str  # deploy | admin | break-glass
    action: str
    expected: str  # denied | allowed
    outcome: str = ""  # denied | allowed | error
    layer: str = ""
    evidence: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == self.expected

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _attempt(attack: Attack, call: Any) -> Attack:
    try:
        resp = call()
        attack.outcome = "allowed"
        meta = resp["ResponseMetadata"]
        attack.evidence = f"HTTP {meta['HTTPStatusCode']}, request id {meta.get('RequestId', '-')}"
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", "")
        rid = exc.response.get("ResponseMetadata", {}).get("RequestId", "-")
        attack.outcome = "denied" if code == "AccessDeniedException" else f"error {code}"
        m = LAYER_RE.search(message)
        attack.layer = m.group(1) if m else ("implicit (no allow)" if "no identity-based policy" in message else "?")
        attack.evidence = f"{code}, request id {rid}"
    return attack


def protected_calls(c: Any, replica: dict[str, Any], retention: dict[str, Any], policy: str) -> dict[str, Any]:
    """action -> a call of it on the replica table (`retention`/`policy`: what the attacker writes)."""
    where = {"tableBucketARN": replica["tableBucketARN"], "namespace": replica["namespace"], "name": replica["name"]}
    return {
        "DeleteTable": lambda: c.delete_table(**where),
        "PutTableMaintenanceConfiguration": lambda: c.put_table_maintenance_configuration(
            **where, type="icebergSnapshotManagement", value=retention
        ),
        "PutTablePolicy": lambda: c.put_table_policy(**where, resourcePolicy=policy),
        "DisassociateTableReplication": lambda: c.disassociate_table_replication(tableArn=replica["tableARN"]),
        "UntagResource": lambda: c.untag_resource(resourceArn=replica["tableARN"], tagKeys=[RUN_TAG]),
    }


def attack_table(
    clients: dict[str, Any], replica: dict[str, Any], current_policy: str, kept: dict[str, Any]
) -> list[Attack]:
    """`clients`: {"deploy", "admin", "break-glass"} -> s3tables client of that assumed role in the replica's
    Region. `kept`: the replica's current retention (what break-glass writes back unchanged)."""
    out: list[Attack] = []
    for who in ("deploy", "admin"):
        for action, call in protected_calls(clients[who], replica, SHORT_RETENTION, json.dumps(OPEN_POLICY)).items():
            # The kit's intent: nothing but break-glass weakens a replica once deployed (DEPLOY_MAY is empty).
            expected = "allowed" if (who, action) in DEPLOY_MAY else "denied"
            out.append(_attempt(Attack(who, action, expected), call))
    bg = protected_calls(clients["break-glass"], replica, kept, current_policy)
    for action in ("PutTableMaintenanceConfiguration", "PutTablePolicy"):
        out.append(_attempt(Attack("break-glass", action, "allowed"), bg[action]))

    def untag() -> Any:  # a key the replica does not carry: the call is allowed, nothing changes
        return clients["break-glass"].untag_resource(
            resourceArn=replica["tableARN"], tagKeys=["kit-live-verify-absent"]
        )

    out.append(_attempt(Attack("break-glass", "UntagResource", "allowed"), untag))
    return out
