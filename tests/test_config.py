"""The typed configuration: examples load; every invalid input is rejected with the field and the rule."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
SEED = tomllib.loads((ROOT / "examples/seed.toml").read_text())
MULTI = tomllib.loads((ROOT / "examples/multi-account.toml").read_text())


def test_examples_load() -> None:
    seed = load_config(ROOT / "examples/seed.toml")
    assert seed.sources[0].region == "us-east-1" and seed.sources[0].bucket == "demo-source-tablebucket"
    assert [r.bucket for r in seed.replicas] == ["demo-dest-tablebucket"]
    assert seed.replicas[0].storage_class == "INTELLIGENT_TIERING"
    assert seed.sources[0].snapshot_retention.max_snapshot_age_hours == 720
    assert seed.replicas[0].snapshot_retention.max_snapshot_age_hours == 2160
    orders = seed.sources[0].namespaces[0].tables[0]
    assert [c.name for c in orders.columns] == ["order_id", "customer_id", "order_date", "amount", "status"]
    assert orders.partition_fields[0].spark_sql == "months(order_date)"
    multi = load_config(ROOT / "examples/multi-account.toml")
    assert multi.replication_of(multi.sources[0]).mode == "bucket" and len(multi.replicas) == 3
    assert {r.region for r in multi.replicas} == {"eu-central-1", "us-east-1", "ap-southeast-2"}
    assert all(r.encryption.type == "kms" for r in multi.replicas)
    assert all(r.account_id != multi.sources[0].account_id for r in multi.replicas)


def test_config_is_frozen() -> None:
    cfg = load_config(ROOT / "examples/seed.toml")
    with pytest.raises(Exception, match="frozen"):
        cfg.sources[0].bucket = "other"  # type: ignore[misc]


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set `a.b[0].c` in a nested dict/list; value `...` (Ellipsis) deletes the key."""
    parts: list[str | int] = []
    for token in path.replace("]", "").split("."):
        name, *idx = token.split("[")
        parts.append(name)
        parts += [int(i) for i in idx]
    cur: Any = doc
    for p in parts[:-1]:
        cur = cur[p]
    if value is ...:
        del cur[parts[-1]]
    else:
        cur[parts[-1]] = value


SEED_REPLICA = copy.deepcopy(SEED["replicas"][0])

# (id, base, [(path, value), ...], expected field in the message, expected words of the rule)
INVALID: list[tuple[str, dict[str, Any], list[tuple[str, Any]], str, str]] = [
    ("bucket-uppercase", SEED, [("source.bucket", "Demo-Source")], "source.bucket", "Glue"),
    (
        "bucket-underscore",
        SEED,
        [("source.bucket", "demo_source")],
        "source.bucket",
        "only lowercase letters, digits and hyphens",
    ),
    ("bucket-dot", SEED, [("replicas[0].bucket", "demo.dest")], "replicas[0].bucket", "no '_' or '.'"),
    ("bucket-too-short", SEED, [("source.bucket", "ab")], "source.bucket", "3-63 characters"),
    ("bucket-too-long", SEED, [("source.bucket", "a" * 64)], "source.bucket", "3-63 characters"),
    ("bucket-prefix-aws", SEED, [("source.bucket", "aws-tables")], "source.bucket", "reserved prefix 'aws'"),
    ("bucket-prefix-xn", SEED, [("source.bucket", "xn--tables")], "source.bucket", "reserved prefix 'xn--'"),
    (
        "bucket-suffix",
        SEED,
        [("replicas[0].bucket", "dest--table-s3")],
        "replicas[0].bucket",
        "reserved suffix '--table-s3'",
    ),
    (
        "bucket-ends-hyphen",
        SEED,
        [("source.bucket", "demo-source-")],
        "source.bucket",
        "start and end with a letter or digit",
    ),
    ("namespace-uppercase", SEED, [("source.namespaces[0].name", "Analytics")], "source.namespaces[0].name", "Glue"),
    (
        "namespace-aws-prefix",
        SEED,
        [("source.namespaces[0].name", "aws_logs")],
        "source.namespaces[0].name",
        "must not start with 'aws'",
    ),
    (
        "namespace-hyphen",
        SEED,
        [("source.namespaces[0].name", "ana-lytics")],
        "source.namespaces[0].name",
        "underscores",
    ),
    (
        "table-uppercase",
        SEED,
        [("source.namespaces[0].tables[0].name", "Orders")],
        "source.namespaces[0].tables[0].name",
        "Athena",
    ),
    (
        "table-too-long",
        SEED,
        [("source.namespaces[0].tables[0].name", "t" * 256)],
        "source.namespaces[0].tables[0].name",
        "1-255 characters",
    ),
    (
        "column-type-unknown",
        SEED,
        [("source.namespaces[0].tables[0].columns[3].type", "money")],
        "source.namespaces[0].tables[0].columns[3].type",
        "unknown Iceberg type",
    ),
    (
        "decimal-precision",
        SEED,
        [("source.namespaces[0].tables[0].columns[3].type", "decimal(40,2)")],
        "source.namespaces[0].tables[0].columns[3].type",
        "precision <= 38",
    ),
    (
        "duplicate-column",
        SEED,
        [("source.namespaces[0].tables[0].columns[1].name", "order_id")],
        "source.namespaces[0].tables[0].columns",
        "duplicate column",
    ),
    (
        "partition-missing-column",
        SEED,
        [("source.namespaces[0].tables[0].partition_by", ["month(ship_date)"])],
        "source.namespaces[0].tables[0].partition_by[0]",
        "not a column",
    ),
    (
        "partition-month-of-string",
        SEED,
        [("source.namespaces[0].tables[0].partition_by", ["month(status)"])],
        "source.namespaces[0].tables[0].partition_by[0]",
        "date/timestamp",
    ),
    (
        "partition-bucket-no-width",
        SEED,
        [("source.namespaces[0].tables[0].partition_by", ["bucket(customer_id)"])],
        "source.namespaces[0].tables[0].partition_by[0]",
        "positive width",
    ),
    ("no-destinations", SEED, [("replicas", [])], "replicas", "at least 1"),
    (
        "six-destinations",
        SEED,
        [("replicas", [dict(SEED_REPLICA, bucket=f"dest-{i}") for i in range(6)])],
        "replicas",
        "at most 5",
    ),
    (
        "duplicate-destination",
        SEED,
        [("replicas", [SEED_REPLICA, SEED_REPLICA])],
        "replicas[1].bucket",
        "duplicate destination",
    ),
    (
        "destination-is-source",
        SEED,
        [
            ("replicas[0].region", "us-east-1"),
            ("replicas[0].bucket", "demo-source-tablebucket"),
            ("recovery.replica", "demo-source-tablebucket"),
        ],
        "replicas[0].bucket",
        "must not be the source",
    ),
    ("destination-same-site", SEED, [("replicas[0].region", "us-east-1")], "replicas[0].region", "Regional outage"),
    (
        "replica-retention-shorter",
        SEED,
        [("replicas[0].snapshot_retention.max_snapshot_age_hours", 24)],
        "replicas[0].snapshot_retention.max_snapshot_age_hours",
        "shorter than",
    ),
    (
        "replica-keeps-fewer",
        SEED,
        [("source.snapshot_retention.min_snapshots_to_keep", 5)],
        "replicas[0].snapshot_retention.min_snapshots_to_keep",
        "at least as many",
    ),
    (
        "retention-zero",
        SEED,
        [("source.snapshot_retention.max_snapshot_age_hours", 0)],
        "source.snapshot_retention.max_snapshot_age_hours",
        "greater than or equal to 1",
    ),
    ("account-11-digits", SEED, [("source.account_id", "11112222333")], "source.account_id", "exactly 12 digits"),
    ("account-integer", SEED, [("replicas[0].account_id", 111122223333)], "replicas[0].account_id", "string"),
    ("unknown-region", SEED, [("replicas[0].region", "us-west-9")], "replicas[0].region", "unknown AWS Region"),
    (
        "cross-account-without-account",
        MULTI,
        [("replicas[2].account_id", "111111111111")],
        "replicas[2].account_id",
        "cross-account destination",
    ),
    (
        "break-glass-is-a-deploy-role",
        MULTI,
        [("protection.break_glass_principals", ["arn:aws:iam::222222222222:role/terraform-deploy"])],
        "protection.break_glass_principals[0]",
        "a deploy role cannot be a break-glass principal",
    ),
    ("no-organization", SEED, [("protection.organization", ...)], "protection.organization", "required"),
    (
        "replica-account-not-under-the-scp",
        MULTI,
        [("protection.organization.ou_accounts", {"ou-ab12-workloads": ["111111111111"]})],
        "protection.organization.targets",
        "account 222222222222 (replica lakehouse-replica-euc1) is not covered by the SCP",
    ),
    (
        "source-account-not-under-the-scp",
        MULTI,
        [("protection.organization.ou_accounts", {"ou-ab12-replicas1": ["222222222222"]})],
        "protection.organization.targets",
        "account 111111111111 (source) is not covered by the SCP",
    ),
    (
        "replica-in-the-management-account",
        SEED,
        [("protection.organization.management_account_id", "111122223333")],
        "replicas[0].account_id",
        "management account 111122223333, where SCPs do not apply",
    ),
    (
        "ou-accounts-key-not-a-target",
        SEED,
        [("protection.organization.ou_accounts", {"ou-zz99-notatarget": ["111122223333"]})],
        "protection.organization.ou_accounts.ou-zz99-notatarget",
        "not one of the SCP targets",
    ),
    (
        "guardrail-on-break-glass",
        MULTI,
        [("protection.guardrail_attach_roles", ["s3tables-break-glass"])],
        "protection.guardrail_attach_roles[0]",
        "is a break-glass role",
    ),
    (
        "pipeline-guardrail-on-break-glass",
        MULTI,
        [
            ("protection.source_guardrail_attach_roles", ["s3tables-break-glass"]),
            ("protection.break_glass_principals", ["arn:aws:iam::111111111111:role/s3tables-break-glass"]),
        ],
        "protection.source_guardrail_attach_roles[0]",
        "is a break-glass role",
    ),
    (
        "kms-without-key",
        SEED,
        [("replicas[0].encryption", {"type": "kms"})],
        "replicas[0].encryption.kms_key",
        "needs a key",
    ),
    (
        "kms-key-malformed",
        SEED,
        [("source.encryption", {"type": "kms", "kms_key": "my-key"})],
        "source.encryption.kms_key",
        "KMS key ARN",
    ),
    (
        "kms-key-wrong-region",
        MULTI,
        [
            (
                "replicas[0].encryption.kms_key",
                "arn:aws:kms:us-east-1:222222222222:key/0a1b2c3d-0000-1111-2222-333344445555",
            )
        ],
        "replicas[0].encryption.kms_key",
        "bucket's Region",
    ),
    (
        "sse-s3-with-key",
        SEED,
        [("source.encryption", {"type": "sse-s3", "kms_key": "create"})],
        "source.encryption.kms_key",
        "only valid with type",
    ),
    ("encryption-type", SEED, [("source.encryption", {"type": "aes"})], "source.encryption.type", "'sse-s3' or 'kms'"),
    (
        "storage-class",
        SEED,
        [("replicas[0].storage_class", "GLACIER")],
        "replicas[0].storage_class",
        "INTELLIGENT_TIERING",
    ),
    (
        "no-break-glass",
        SEED,
        [("protection.break_glass_principals", [])],
        "protection.break_glass_principals",
        "at least 1",
    ),
    (
        "break-glass-missing",
        SEED,
        [("protection.break_glass_principals", ...)],
        "protection.break_glass_principals",
        "required",
    ),
    (
        "break-glass-not-arn",
        SEED,
        [("protection.break_glass_principals", ["admin"])],
        "protection.break_glass_principals",
        "IAM role or user ARN",
    ),
    (
        "replication-unknown-table",
        SEED,
        [("replication.tables", ["analytics.missing"])],
        "replication.tables[0]",
        "not a table declared",
    ),
    ("replication-tables-empty", SEED, [("replication.tables", [])], "replication.tables", "at least one"),
    ("replication-mode", SEED, [("replication.mode", "all")], "replication.mode", "'bucket' or 'tables'"),
    (
        "bucket-mode-with-tables",
        MULTI,
        [("replication.tables", ["sales.orders"])],
        "replication.tables",
        "only valid with mode",
    ),
    (
        "recovery-replica-unknown",
        SEED,
        [("recovery.replica", "nope-bucket")],
        "recovery.replica",
        "not the bucket of any entry",
    ),
    (
        "recovery-is-replica",
        SEED,
        [("recovery.bucket", "demo-dest-tablebucket")],
        "recovery.bucket",
        "its own table bucket",
    ),
    ("emr-too-old", SEED, [("recovery.emr_release", "emr-6.15.0")], "recovery.emr_release", "emr-7.5.0 or later"),
    (
        "scp-target",
        SEED,
        [("protection.organization.targets", ["engineering"])],
        "protection.organization.targets",
        "OU",
    ),
    ("unknown-key", SEED, [("source.retention_days", 30)], "source.retention_days", "unknown key"),
    ("unknown-section", SEED, [("replica", {})], "replica", "unknown key"),
    ("kit-name", SEED, [("kit.name", "Seed_Kit")], "kit.name", "lowercase letters"),
    (
        "adopt-changes-unadopted",
        SEED,
        [("source.adopt_changes", ["encryption"])],
        "source.adopt_changes",
        "adopt = true",
    ),
    (
        "adopt-changes-unknown",
        SEED,
        [("source.adopt", True), ("source.adopt_changes", ["tags"])],
        "source.adopt_changes[0]",
        "'bucket_policy'",
    ),
]


@pytest.mark.parametrize(("case", "base", "edits", "field", "rule"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_configuration_is_rejected(
    case: str, base: dict[str, Any], edits: list[tuple[str, Any]], field: str, rule: str
) -> None:
    doc = copy.deepcopy(base)
    for path, value in edits:
        _set(doc, path, value)
    with pytest.raises(ConfigError) as info:
        parse_config(doc, f"<{case}>")
    issues = info.value.issues
    matching = [i for i in issues if i.field == field]
    assert matching, f"no issue names {field!r}; got {[str(i) for i in issues]}"
    assert any(rule.lower() in i.rule.lower() for i in matching), [str(i) for i in matching]
    assert field in str(info.value)


def test_at_least_25_invalid_cases() -> None:
    assert len(INVALID) >= 25


def test_all_problems_are_reported_at_once() -> None:
    doc = copy.deepcopy(SEED)
    _set(doc, "source.account_id", "123")
    _set(doc, "replicas[0].region", "mars-1")
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    fields = {i.field for i in info.value.issues}
    assert {"source.account_id", "replicas[0].region"} <= fields


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[kit\nname = 'x'\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_invalid_configuration_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from s3tables_kit.infra import main as entry

    doc = (ROOT / "examples/seed.toml").read_text().replace('region = "us-west-2"', 'region = "us-west-9"')
    cfg = tmp_path / "bad.toml"
    cfg.write_text(doc)
    out = tmp_path / "out"
    monkeypatch.setenv("KIT_CONFIG", str(cfg))
    monkeypatch.setenv("KIT_OUTDIR", str(out))
    assert entry.main() == 2
    assert "replicas[0].region: unknown AWS Region" in capsys.readouterr().err
    assert not out.exists()
