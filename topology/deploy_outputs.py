"""The outputs of a deploy of a configuration: what `cdktf deploy` of `cfg` exports, with the configuration's
deterministic ARNs and placeholders for the values only a real deploy knows (a kit-created key's ARN, the EMR
application), written through the contract's builders (`s3tables_kit.topology.outputs`). Read by `make summary`, the
stand-in's deployer (`harness/deploy.py`) and the tests' worlds, whose tools read outputs like after a real deploy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from s3tables_kit.topology.backup import VAULT_STACK_ID
from s3tables_kit.topology.model import KitConfig, Replica, Source
from s3tables_kit.topology.outputs import (
    OUTPUT_ORGANIZATION,
    OUTPUT_RECOVERY,
    OUTPUT_REPLICA,
    OUTPUT_SOURCE,
    OUTPUT_VAULT,
    encryption_value,
    recovery_value,
    replica_value,
    source_value,
    vault_value,
)

PLACEHOLDER_EMR_APPLICATION = "00abc"  # nothing in the stand-in runs an EMR job
PLACEHOLDER_KEY_ID = "00000000-0000-4000-8000-000000000000"  # a kit-created key's id exists after apply only
PLACEHOLDER_POINT_KEY_ID = "00000000-0000-4000-8000-000000000001"  # the vault's point key's, likewise


def site_encryption(site: Source | Replica) -> dict[str, object]:
    """A site's `encryption` as configured: a kit-created key's ARN is known after apply only."""
    key = site.encryption.kms_key
    return encryption_value(site.encryption.sse_algorithm, key if (key or "").startswith("arn:") else None)


def recovery_outputs(cfg: KitConfig) -> dict[str, Any]:
    """The recovery stack's `kit_recovery` output for a configuration (placeholder EMR application)."""
    value = recovery_value(
        cfg,
        table_bucket_arn=cfg.recovery_bucket_arn,
        role_arn=cfg.recovery_role_arn,
        emr_application_id=PLACEHOLDER_EMR_APPLICATION,
        replica_table_bucket_arn=cfg.recovery_replica.bucket_arn,
    )
    return {OUTPUT_RECOVERY: value}


def source_outputs(cfg: KitConfig, src: Source) -> dict[str, Any]:
    """One source stack's `kit_source` (as `infra/stacks/source.py` writes it)."""
    value = source_value(
        cfg,
        src,
        table_bucket_arn=src.bucket_arn,
        replication_role_arn=cfg.replication_role_arn_of(src),
        destinations=[r.bucket_arn for r in cfg.destinations_of(src)],
        encryption=site_encryption(src),
    )
    return {OUTPUT_SOURCE: value}


def replica_outputs(cfg: KitConfig, replica: Replica, *, feeding: Sequence[str] | None = None) -> dict[str, Any]:
    """One replica stack's `kit_replica` (as `infra/stacks/replica.py` writes it)."""
    value = replica_value(
        cfg, replica, table_bucket_arn=replica.bucket_arn, encryption=site_encryption(replica), feeding=feeding
    )
    return {OUTPUT_REPLICA: value}


def outputs_doc(cfg: KitConfig, organization: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole `outputs.json` of a deploy of `cfg`, one entry per stack (`organization`: the `kit_organization`
    value from `organization_value`, whose policy ids only the deploy knows)."""
    doc: dict[str, Any] = {src.stack_id: source_outputs(cfg, src) for src in cfg.sources}
    doc |= {r.stack_id: replica_outputs(cfg, r) for r in cfg.replicas}
    doc["recovery"] = recovery_outputs(cfg)
    if cfg.vault is not None:
        v = cfg.vault
        key = (
            f"arn:{v.partition}:kms:{v.region}:{v.account_id}:key/{PLACEHOLDER_KEY_ID}" if v.creates_key else v.kms_key
        )
        points = f"arn:{v.partition}:kms:{v.region}:{v.account_id}:key/{PLACEHOLDER_POINT_KEY_ID}"
        value = vault_value(cfg, bucket_arn=v.bucket_arn(cfg.kit.name), kms_key_arn=key, point_key_arn=points)
        doc[VAULT_STACK_ID] = {OUTPUT_VAULT: value}
    if organization is not None:
        doc["organization"] = {OUTPUT_ORGANIZATION: organization}
    return doc
