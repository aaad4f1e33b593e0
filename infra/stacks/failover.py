"""The failover topology: `[failover] promoted_bucket` makes a promoted replica bucket the source.

What `cdktf deploy` of this topology changes, and what it does not:

- **No stack of the failed Region.** The source stack is not synthesized: planning and deploying need only the
  replica, recovery and organization stacks (their states and providers are elsewhere). Its state is left as it
  is: nothing here destroys it, and a failback deploys it again.
- **Nothing is replaced.** Every stack keeps its id and every resource its construct path, hence its Terraform
  address and state: the promoted bucket stays `replica-<bucket>`'s `table-bucket`, and its bucket policy, key,
  guardrail and the SCPs change in place (documents only). `tests/test_failover_synth.py` proves it against the
  normal topology's synth.
- **Added**: in the promoted bucket's stack, the failover replication role and bucket-level replication from the
  promoted bucket to `replicate_to`, and the replication monitor (alarm topic, function, schedule, alarms) watching
  the new source; a replica stack per new bucket; the promoted bucket's SCP (`<kit>-protect-s3tables-promoted`),
  attached to its account alone.
- The recovery stack stays where it is (`recovery.replica`'s account and Region, same id and addresses), but recovery
  and its scheduled rehearsal read a replica of the new source (`FailoverTopology.recovery_replica`): the recovery
  role's permissions, the rehearsal's job arguments, the replica key policies and the stack's output change in place.

Deploy it with break-glass credentials: it rewrites replica key policies, the guardrail and the SCPs, which the kit
lets only break-glass change. The failover tool has already applied the promoted bucket policy by then (the same
document, so the plan shows no change for it). On the promoted bucket the deploy role may only create the
replication from it (`PutTableBucketReplication`): its policies, retention, encryption and replication
otherwise change with break-glass alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from cdktf import App
from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from constructs import Construct

from s3tables_kit.infra.constructs.dashboard import monitor_dashboard, rehearsal_site
from s3tables_kit.infra.constructs.monitor import source_assurance
from s3tables_kit.infra.constructs.organization_guardrail import ReplicaScp
from s3tables_kit.infra.constructs.replication import ReplicationConfiguration
from s3tables_kit.infra.constructs.replication_role import add_replication_role
from s3tables_kit.infra.stacks.failover_outputs import add_failover_source_output
from s3tables_kit.infra.stacks.organization import OrganizationStack
from s3tables_kit.infra.stacks.recovery import RecoveryStack
from s3tables_kit.infra.stacks.replica import ReplicaStack
from s3tables_kit.policies import docset
from s3tables_kit.policies import failover as failover_policies
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.documents import kms_alias
from s3tables_kit.topology.config import (
    FAILOVER_MONITOR,
    SINGLE_SOURCE,
    Kit,
    KitConfig,
    Replica,
    Replication,
    Source,
)
from s3tables_kit.topology.failover import FailoverTopology, failover_topology


def failover_monitor_config(cfg: KitConfig, topo: FailoverTopology) -> KitConfig:
    """The configuration the replication monitor of the failover topology is built from (with its one source, the
    promoted bucket): the destinations as replicas, and `<kit>-fo` as the kit name, so its roles, function, topic and
    alarms never take a name the failed source's stacks still hold (IAM is global; same-account kits collide).
    The monitor publishes under `Kit=<kit>-fo`: its alarms are new ones, not the failed source's."""
    p = topo.promoted
    source = Source(
        account_id=p.account_id,
        region=p.region,
        bucket=p.bucket,
        encryption=p.encryption,
        storage_class=p.storage_class,
        deploy_role_arn=p.deploy_role_arn,
        snapshot_retention=p.snapshot_retention,
        unreferenced_file_removal=p.unreferenced_file_removal,
        namespaces=topo.failed_source.namespaces,
        replication=Replication(mode="bucket"),
        replicate_to=tuple(d.bucket for d in topo.destinations),
    )
    return cfg.model_copy(
        update={
            "kit": Kit.model_construct(name=topo.name_prefix),
            "sources": (source,),
            "replicas": topo.destinations,
            "scheme": SINGLE_SOURCE,
            "kind": FAILOVER_MONITOR,  # it describes no further failover, and no freshness check reads it
            # Its own document set must build: its recovery reads a replica it has (the topology's choice,
            # a destination), and it describes no further failover.
            "recovery": cfg.recovery.model_copy(
                update={"replica": (topo.recovery_replica or topo.destinations[0]).bucket}
            ),
            "failover": None,
            # its stack deploys no scheduled hardener: its monitor's record must not expect one
            "assurance": cfg.assurance.model_copy(
                update={"harden": cfg.assurance.harden.model_copy(update={"enabled": False})}
            ),
        }
    )


class FailoverReplication(Construct):
    """Bucket-level replication from the promoted bucket (every table, present and future) to the destinations,
    with its own role in the promoted bucket's account (`<kit>-fo-s3tables-replication`), whose documents are the
    topology's replication role documents (`docs`)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        docs: DocumentSet,
        topo: FailoverTopology,
        source_bucket_arn: str,
        destination_bucket_arns: Sequence[str],
    ) -> None:
        super().__init__(scope, id)
        self.role, self.policy = add_replication_role(
            self,
            name=topo.replication_role_name,
            description="Assumed by S3 Tables replication to copy the promoted tables to the failover destinations",
            docs=docs,
        )
        ReplicationConfiguration(
            self,
            "replication",
            mode="bucket",
            role_arn=self.role.arn,
            source_bucket_arn=source_bucket_arn,
            tables={},
            destination_bucket_arns=destination_bucket_arns,
            depends_on=[self.policy],
        )


def recovery_reads(topo: FailoverTopology) -> Replica:
    """Recovery and its rehearsal read a replica of the new source
    (`s3tables_kit.topology.config.failover_recovery_replica` decides which; config load refuses a failover without
    one); the recovery stack keeps its account, Region, id and addresses."""
    if topo.recovery_replica is None:
        raise ValueError("failover.replicate_to: no replica of the new source in the recovery account")
    return topo.recovery_replica


def build_failover_stacks(app: App, cfg: KitConfig, docs: DocumentSet, *, allow_destroy: bool) -> None:
    """`docs`: the topology's document set (`s3tables_kit.policies.docset.build(cfg)`), which resolves every document
    these stacks deploy to the configured promotion's `failover--<promoted>--*` (the documents
    `s3tables_kit.policies.render` writes for review): the stacks look them up by the same names as the normal
    topology's, with no override."""
    topo = failover_topology(cfg)
    stacks: dict[str, ReplicaStack] = {}
    seen_accounts: set[str] = set()
    for r in (*cfg.replicas, *topo.new_buckets):
        stacks[r.bucket] = ReplicaStack(
            app, cfg, docs, r, owns_guardrail=r.account_id not in seen_accounts, allow_destroy=allow_destroy
        )
        seen_accounts.add(r.account_id)
    promoted = stacks[topo.promoted.bucket]
    FailoverReplication(
        promoted,
        "failover-replication",
        docs=docs,
        topo=topo,
        source_bucket_arn=promoted.bucket.arn,
        destination_bucket_arns=[stacks[d.bucket].bucket.arn for d in topo.destinations],
    )
    mon_cfg = failover_monitor_config(cfg, topo)
    (mon_src,) = mon_cfg.sources  # the promoted bucket
    if topo.promoted.encryption.creates_key and promoted.bucket.kms_key_arn:
        # The monitor's KMS permission names the key by its configuration's alias: a second alias of the same key.
        KmsAlias(
            promoted,
            "failover-kms-alias",
            name=kms_alias(mon_cfg, topo.promoted.bucket),
            target_key_id=promoted.bucket.kms_key_arn,
        )
    reviewed = {d.bucket_arn: docs.document("replica-bucket-policy", d.bucket) for d in topo.destinations}
    # the monitor follows the new source
    monitor = source_assurance(promoted, mon_cfg, mon_src, docset.build_monitor(mon_cfg), reviewed)
    monitor_dashboard(promoted, mon_cfg, mon_src, monitor, rehearsal_site(cfg, cfg.replicas))  # the kit's rehearsal
    add_failover_source_output(promoted, cfg, topo)  # the ops tools' outputs contract: promoted bucket as source
    RecoveryStack(
        app,
        cfg,
        docs,
        replica_bucket_arn=stacks[recovery_reads(topo).bucket].bucket.arn,
        allow_destroy=allow_destroy,
        reads=recovery_reads(topo),
    )
    org = cfg.protection.organization
    if org:
        org_stack = OrganizationStack(app, cfg, docs, org)
        ReplicaScp(
            org_stack,
            "promoted-scp",
            name=failover_policies.scp_promoted_name(cfg),
            policy=docs.document("scp-protect-promoted"),
            # its account alone: the organization's targets keep at most the three kit SCPs (decision 0006)
            targets=failover_policies.promoted_scp_targets(topo),
            description="Protects a promoted S3 Tables replica: writers write, deletion and retention stay "
            "break-glass only",
        )
