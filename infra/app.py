"""Compose the stacks of one topology. Stacks only compose constructs; construct and stack ids are part of the
Terraform state contract (stable, lowercase, never renamed casually)."""

from __future__ import annotations

from cdktf import App, TerraformStack

from infra.config import KitConfig
from infra.constructs.backend import configure_state
from infra.lifecycle import protect_from_destroy
from infra.nag import apply_nag
from infra.stacks.organization import OrganizationStack
from infra.stacks.recovery import RecoveryStack
from infra.stacks.replica import ReplicaStack
from infra.stacks.source import SourceStack


def build_app(cfg: KitConfig, *, outdir: str | None = None, allow_destroy: bool = False) -> App:
    app = App(outdir=outdir, stack_traces=False)
    if cfg.failover is not None and cfg.failover.promoted_bucket is not None:
        from infra.stacks.failover import build_failover_stacks  # issue 17: the promoted bucket is the source

        build_failover_stacks(app, cfg, allow_destroy=allow_destroy)
        return _finish(app, cfg, allow_destroy=allow_destroy)
    replica_stacks: list[ReplicaStack] = []
    seen_accounts: set[str] = set()
    for replica in cfg.replicas:
        replica_stacks.append(
            ReplicaStack(
                app, cfg, replica, owns_guardrail=replica.account_id not in seen_accounts, allow_destroy=allow_destroy
            )
        )
        seen_accounts.add(replica.account_id)
    SourceStack(app, cfg, destination_bucket_arns=[s.bucket.arn for s in replica_stacks], allow_destroy=allow_destroy)
    recovery_from = next(
        s for s, r in zip(replica_stacks, cfg.replicas, strict=True) if r.bucket == cfg.recovery.replica
    )
    RecoveryStack(app, cfg, replica_bucket_arn=recovery_from.bucket.arn, allow_destroy=allow_destroy)
    if cfg.protection.organization:
        OrganizationStack(app, cfg, cfg.protection.organization)
    return _finish(app, cfg, allow_destroy=allow_destroy)


def _finish(app: App, cfg: KitConfig, *, allow_destroy: bool) -> App:
    # One state per stack, in the configured backend (cross-stack references read the same backend).
    for stack in app.node.children:
        if isinstance(stack, TerraformStack):
            configure_state(stack, cfg)
    # Everything that holds data or protection carries prevent_destroy unless the explicit destroy flag is set.
    protect_from_destroy(app, allow_destroy=allow_destroy)
    # KIT policy rules run at synth on every document; a violation fails synth with the rule and construct path.
    apply_nag(app)
    return app
