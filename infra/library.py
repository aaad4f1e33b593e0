"""The kit's constructs as a library: the one import a platform team's own CDKTF app needs (`pip install
s3tables-replica-kit[infra]`), with or without a `kit.toml`.

    from cdktf import App
    from s3tables_kit.infra.library import add_replica_set, parse_config

    app = App()
    TeamStack(app, "team")                                    # the team's own stacks, untouched by the kit
    replica_set = add_replica_set(app, parse_config({...}))   # or load_config("kit.toml")
    app.synth()

`__all__` below is the public API (docs/provisioning.md#use-the-constructs-in-your-own-cdktf-app lists it with one
line each); every other name under `s3tables_kit.infra` is the kit's own and may change without notice. Construct
and stack ids are part of the Terraform state contract: the stacks a configuration adds are the ones the kit's own
app synthesizes, with the same ids, so a state deployed by either is the other's too.
"""

from __future__ import annotations

from s3tables_kit.infra.app import ReplicaSet, add_replica_set, build_app, build_replica_stacks
from s3tables_kit.infra.constructs.backend import configure_state
from s3tables_kit.infra.constructs.catalog import SourceCatalog
from s3tables_kit.infra.constructs.organization_guardrail import ReplicaScp
from s3tables_kit.infra.constructs.replica_protection import ReplicaBucketPolicy, ReplicaGuardrail
from s3tables_kit.infra.constructs.replication import ReplicationConfiguration
from s3tables_kit.infra.constructs.replication_role import ReplicationRole
from s3tables_kit.infra.constructs.table_bucket import TableBucket
from s3tables_kit.infra.lifecycle import protect_from_destroy
from s3tables_kit.infra.nag import apply_nag, suppress
from s3tables_kit.infra.stacks.organization import OrganizationStack
from s3tables_kit.infra.stacks.recovery import RecoveryStack
from s3tables_kit.infra.stacks.replica import ReplicaStack
from s3tables_kit.infra.stacks.source import SourceStack
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.docset import build as build_documents
from s3tables_kit.topology.config import ConfigError, KitConfig, load_config, parse_config

__all__ = [
    "ConfigError",
    "DocumentSet",
    "KitConfig",
    "OrganizationStack",
    "RecoveryStack",
    "ReplicaBucketPolicy",
    "ReplicaGuardrail",
    "ReplicaScp",
    "ReplicaSet",
    "ReplicaStack",
    "ReplicationConfiguration",
    "ReplicationRole",
    "SourceCatalog",
    "SourceStack",
    "TableBucket",
    "add_replica_set",
    "apply_nag",
    "build_app",
    "build_documents",
    "build_replica_stacks",
    "configure_state",
    "load_config",
    "parse_config",
    "protect_from_destroy",
    "suppress",
]
