"""Compose the stacks of one topology. Stacks only compose constructs; construct and stack ids are part of the
Terraform state contract (stable, lowercase, never renamed casually).

A configuration builds one stack per source (`source` for `[source]`, `source-<id>` for each source of an estate,
`[[sources]]`), one per replica (`replica-<bucket>`, fan-in vaults included), the recovery stack, with
`[protection.organization]` the organization stack and, with `[vault]`, the backup vault's stack (`vault`). A source
stack is built from the configuration and its source (its destinations `destinations_of(src)`, its replication
`replication_of(src)`, names prefixed `name_prefix_of(src)`) and reads the estate's one document set by the names
`[source]` uses (`DocumentSet.for_source`)."""

from __future__ import annotations

from dataclasses import dataclass

from cdktf import App, TerraformStack

from s3tables_kit.infra.constructs.backend import configure_state
from s3tables_kit.infra.lifecycle import protect_from_destroy
from s3tables_kit.infra.nag import apply_nag
from s3tables_kit.infra.stacks.organization import OrganizationStack
from s3tables_kit.infra.stacks.recovery import RecoveryStack
from s3tables_kit.infra.stacks.replica import ReplicaStack
from s3tables_kit.infra.stacks.source import SourceStack
from s3tables_kit.infra.stacks.vault import VaultStack
from s3tables_kit.policies import docset
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.config import KitConfig


class EstateFailoverError(ValueError):
    """`[failover] promoted_bucket` in an estate: the failover topology is built for `[source]` configurations."""


@dataclass(frozen=True)
class ReplicaSet:
    """The stacks one configuration added to an App: its protected replica set."""

    stacks: tuple[TerraformStack, ...]
    """Every stack added, in the order built (replicas, sources, recovery, organization)."""

    @property
    def replicas(self) -> dict[str, ReplicaStack]:
        """The replica stacks by replica bucket name (each has `bucket`, the replica table bucket)."""
        return {s.bucket.name: s for s in self.stacks if isinstance(s, ReplicaStack)}

    @property
    def sources(self) -> tuple[SourceStack, ...]:
        """The source stacks (none in the failover topology: the failed source is not synthesized)."""
        return tuple(s for s in self.stacks if isinstance(s, SourceStack))


def build_app(cfg: KitConfig, *, outdir: str | None = None, allow_destroy: bool = False) -> App:
    """The kit's own App: every stack of `cfg` (`add_replica_set`), written to `outdir` (default `cdktf.out`)."""
    if cfg.kind.promoted:
        refuse_estate_failover(cfg)  # before the App: a refused synth writes nothing
    app = App(outdir=outdir, stack_traces=False)
    add_replica_set(app, cfg, allow_destroy=allow_destroy)
    return app


def add_replica_set(app: App, cfg: KitConfig, *, allow_destroy: bool = False) -> ReplicaSet:
    """Add the stacks of `cfg` to `app` (the kit's own or a team's App, beside its other stacks): sources, replicas,
    recovery and, with `[protection.organization]`, the organization stack, each with its state backend,
    `prevent_destroy` (lifted only by `allow_destroy`) and the KIT nag rules; the App's other stacks are left as
    they are."""
    before = {c.node.id for c in app.node.children}
    if cfg.kind.promoted:
        refuse_estate_failover(cfg)
        from s3tables_kit.infra.stacks.failover import (
            build_failover_stacks,  # `[failover] promoted_bucket`: the promoted bucket is the source
        )

        docs = docset.build(cfg)
        build_failover_stacks(app, cfg, docs, allow_destroy=allow_destroy)
        if cfg.vault is not None:  # the vault outlives a failover: its stack stays as it is
            VaultStack(app, cfg, docs, cfg.vault)
        return _finish(app, before, cfg, allow_destroy=allow_destroy)
    # Every policy document of the topology, built once; each construct deploys its document from this set.
    docs = docset.build(cfg)
    replica_stacks = build_replica_stacks(app, cfg, docs, allow_destroy=allow_destroy)
    for i, src in enumerate(cfg.sources):
        SourceStack(
            app,
            cfg,
            src,
            docs.for_source(cfg, src),
            destination_bucket_arns=[replica_stacks[r.bucket].bucket.arn for r in cfg.destinations_of(src)],
            allow_destroy=allow_destroy,
            # a replica account's pipeline guardrail is its replica stack's (beside the guardrail)
            owns_pipeline_guardrail=all(s.account_id != src.account_id for s in cfg.sources[:i])
            and all(r.account_id != src.account_id for r in cfg.replicas),
        )
    RecoveryStack(
        app,
        cfg,
        docs,
        replica_bucket_arn=replica_stacks[cfg.recovery.replica].bucket.arn,
        allow_destroy=allow_destroy,
    )
    if cfg.protection.organization:
        OrganizationStack(app, cfg, docs, cfg.protection.organization)
    if cfg.vault is not None:
        VaultStack(app, cfg, docs, cfg.vault)
    return _finish(app, before, cfg, allow_destroy=allow_destroy)


def build_replica_stacks(
    app: App, cfg: KitConfig, docs: DocumentSet, *, allow_destroy: bool = False
) -> dict[str, ReplicaStack]:
    """One stack per replica, by bucket name; the first replica of each account owns the account's guardrail (IAM
    is global: one per account for the whole estate)."""
    stacks: dict[str, ReplicaStack] = {}
    seen_accounts: set[str] = set()
    for replica in cfg.replicas:
        stacks[replica.bucket] = ReplicaStack(
            app,
            cfg,
            docs,
            replica,
            owns_guardrail=replica.account_id not in seen_accounts,
            allow_destroy=allow_destroy,
        )
        seen_accounts.add(replica.account_id)
    return stacks


def refuse_estate_failover(cfg: KitConfig) -> None:
    """The failover topology (`[failover]`) is built for `[source]` configurations only. Built from the promoted
    bucket's source alone, it would deploy that source's documents to every replica of that source, a fan-in vault
    included (granting and exempting that source's replication role alone, so the other sources' replication into
    it would stop), and it would synthesize no stack of the other sources. Refused at synth, before anything is
    built."""
    if cfg.kind.promoted and not cfg.scheme.builds_failover_topology:
        raise EstateFailoverError(
            f"failover.promoted_bucket = {cfg.kind.promoted_bucket!r}: the failover topology is built "
            "for a [source] configuration only, not for an estate ([[sources]]): its documents would cover one source "
            "and drop the others' replication into shared replicas. Remove promoted_bucket to synthesize the estate"
        )


def _finish(app: App, before: set[str], cfg: KitConfig, *, allow_destroy: bool) -> ReplicaSet:
    """State, destroy protection and nag rules on the stacks added since `before` (the ids of the App's children
    then)."""
    added = tuple(c for c in app.node.children if isinstance(c, TerraformStack) and c.node.id not in before)
    for stack in added:
        # One state per stack, in the configured backend (cross-stack references read the same backend).
        configure_state(stack, cfg)
        # Everything that holds data or protection carries prevent_destroy unless the explicit destroy flag is set.
        protect_from_destroy(stack, allow_destroy=allow_destroy)
        # KIT policy rules run at synth on every document; a violation fails synth with the rule and construct path.
        apply_nag(stack)
    return ReplicaSet(added)
