"""How break-glass makes each protected change `explain` reports (the runbook section and the one-line how), by the
protection rule's risk: its Sid without `DenyReplica` / `DenyPromoted`."""

from __future__ import annotations

from collections.abc import Sequence

from s3tables_kit.policies.actions import ProtectionRule

_REVIEW = "docs/policy-review.md#protection-rules"
_FAILOVER = "docs/failover.md#failing-over-to-a-replica-make-failover"
_LOCKED = "docs/provisioning.md#changing-a-locked-setting-a-break-glass-deploy"
# fmt: off
RUNBOOK: dict[str, tuple[str, str]] = {
    "Deletion": (_REVIEW, "with break-glass credentials only: no kit tool deletes"),
    "RetentionChange": ("docs/assurance.md#operations-after-apply",
                        "`make harden` run as break-glass sets replica retention and table policies"),
    "DataWrite": (_FAILOVER, "a replica becomes writable only by promotion (`make failover`, run as break-glass)"),
    "ProtectionChange": (_LOCKED, "a bucket policy change is a break-glass deploy; table policies are put by "
                                  "`make harden` as break-glass"),
    "ReplicationChange": (_FAILOVER, "promotion disassociates replicas as break-glass; any other replication "
                                     "change is a break-glass deploy"),
    "ReplicationSetup": (_LOCKED, "the failover topology's deploy, or a break-glass deploy"),
    "BucketSettingsChange": (_LOCKED, "a break-glass deploy of the replica's stack"),
    "TagChange": (_REVIEW, "with break-glass credentials only"),
    "NameSquatting": (_FAILOVER, "only the replication service creates replicas; a promoted bucket's writers "
                                 "create tables"),
    "KeyDestruction": (_REVIEW, "with break-glass credentials only (the key policy, the SCP and the guardrail deny "
                                "everyone else)"),
}
# fmt: on


def risk(sid: str) -> str:
    """The risk a protection rule guards against: its Sid without the scope prefix."""
    return sid.removeprefix("DenyReplica").removeprefix("DenyPromoted")


def break_glass_how(rules: Sequence[ProtectionRule]) -> tuple[tuple[str, str], ...]:
    """(runbook section, how) for each of `rules` the runbook covers, in order, without repeats."""
    return tuple(dict.fromkeys(RUNBOOK[risk(r.sid)] for r in rules if risk(r.sid) in RUNBOOK))
