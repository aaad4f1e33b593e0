"""A platform team's own CDKTF app that composes a protected S3 Tables replica set from the kit's constructs.

The team keeps its own stack (`analytics-team`: its alerts topic and a parameter telling its consumers where the
replica is) and adds the kit's stacks beside it with one call, `add_replica_set`. The configuration is built in code
(`parse_config`, validated like a `kit.toml`), or read from a file with `--config kit.toml`.

    python3 main.py                    # what `cdktf synth` runs (cdktf.json); writes cdktf.out/stacks/
    python3 main.py --config kit.toml  # the same app from a kit.toml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cdktf import App, LocalBackend, TerraformStack
from cdktf_cdktf_provider_aws.provider import AwsProvider
from cdktf_cdktf_provider_aws.sns_topic import SnsTopic
from cdktf_cdktf_provider_aws.ssm_parameter import SsmParameter
from constructs import Construct

from s3tables_kit.infra.library import ConfigError, KitConfig, add_replica_set, load_config, parse_config

SOURCE_ACCOUNT, REPLICA_ACCOUNT, MANAGEMENT_ACCOUNT = "111111111111", "222222222222", "999999999999"

# One source bucket replicated to one replica in another account and Region, protected by the replica bucket
# policy, the replica account's IAM guardrail and the Organizations SCPs (break-glass exempt).
CONFIG: dict[str, object] = {
    "kit": {"name": "analytics"},
    "source": {
        "account_id": SOURCE_ACCOUNT,
        "region": "eu-west-1",
        "bucket": "analytics-source",
        "encryption": {"type": "kms", "kms_key": "create"},
        "snapshot_retention": {"max_snapshot_age_hours": 168, "min_snapshots_to_keep": 5},
        "namespaces": [
            {
                "name": "sales",
                "tables": [
                    {
                        "name": "orders",
                        "partition_by": ["day(order_ts)"],
                        "columns": [
                            {"name": "order_id", "type": "long", "required": True},
                            {"name": "order_ts", "type": "timestamptz", "required": True},
                            {"name": "amount", "type": "decimal(18,2)"},
                        ],
                    }
                ],
            }
        ],
    },
    "replicas": [
        {
            "account_id": REPLICA_ACCOUNT,
            "region": "eu-central-1",
            "bucket": "analytics-replica",
            "storage_class": "INTELLIGENT_TIERING",
            "encryption": {"type": "kms", "kms_key": "create"},
            "snapshot_retention": {"max_snapshot_age_hours": 2160, "min_snapshots_to_keep": 10},
        }
    ],
    "replication": {"mode": "bucket"},
    "protection": {
        "break_glass_principals": [f"arn:aws:iam::{REPLICA_ACCOUNT}:role/s3tables-break-glass"],
        "organization": {
            "management_account_id": MANAGEMENT_ACCOUNT,
            "targets": ["ou-ab12-analytics"],
            "ou_accounts": {"ou-ab12-analytics": [SOURCE_ACCOUNT, REPLICA_ACCOUNT]},
        },
    },
    "recovery": {"replica": "analytics-replica", "bucket": "analytics-recovery", "namespace": "recovered"},
}


class AnalyticsTeamStack(TerraformStack):
    """The team's own resources, which the kit neither configures nor checks: its alerts topic, and the replica
    bucket's ARN published for its consumers (a cross-stack reference into the kit's replica stack)."""

    def __init__(self, scope: Construct, id: str, *, account_id: str, region: str, replica_bucket_arn: str) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region=region, allowed_account_ids=[account_id])
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        SnsTopic(self, "data-quality-alerts", name="analytics-data-quality-alerts")
        SsmParameter(
            self,
            "replica-bucket-arn",
            name="/analytics/replica-table-bucket-arn",
            type="String",
            value=replica_bucket_arn,
            description="Where the read-only replica of the analytics tables is",
        )


def build(app: App, cfg: KitConfig) -> None:
    """The whole app: the kit's protected replica set, then the team's stack that reads from it."""
    replica_set = add_replica_set(app, cfg)
    replica = cfg.replicas[0]
    AnalyticsTeamStack(
        app,
        "analytics-team",
        account_id=replica.account_id,
        region=replica.region,
        replica_bucket_arn=replica_set.replicas[replica.bucket].bucket.arn,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, help="a kit.toml to compose instead of the configuration in code")
    parser.add_argument("--outdir", help="where the stacks are written (default: cdktf's, cdktf.out)")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config) if args.config else parse_config(CONFIG, "main.py CONFIG")
    except (ConfigError, OSError) as err:
        print(f"own-app: {err}", file=sys.stderr)
        return 2
    app = App(outdir=args.outdir) if args.outdir else App()
    build(app, cfg)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
