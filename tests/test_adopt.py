"""Adopting an existing lake (examples/adopt.toml): the source stack imports the bucket, its namespaces and its
policy instead of creating them, sets only the settings kit.toml states, and deploys the adopter's bucket policy
statements beside the kit's once each passes the KIT-ADOPT rules (docs/decisions/0033-adopting-an-existing-lake.md).

Real components only: a full App synth of the example and variants of it, the rendered documents, and the IAM
simulator on the merged policy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra.takeover import replication_imports
from s3tables_kit.policies import docset
from s3tables_kit.policies.adopted import AdoptedStatementRefused
from s3tables_kit.topology.config import ConfigError, KitConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "adopt.toml"
POLICY_FILE = ROOT / "examples" / "adopt" / "bucket-policy-sales-lake.json"
BUCKET = "arn:aws:s3tables:us-east-1:111122223333:bucket/sales-lake"
REPLICATION = "aws_s3tables_table_bucket_replication"
ANALYTICS = "arn:aws:iam::111122223333:role/analytics-athena"
PARTNER = "arn:aws:iam::999988887777:root"  # an account the configuration names nowhere
Stack = dict[str, Any]


def variant(tmp_path: Path, *replace: tuple[str, str], policy: dict[str, Any] | None = None) -> Path:
    """examples/adopt.toml with text replaced, its policy file (or `policy`) beside it in `tmp_path`."""
    text = EXAMPLE.read_text()
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "adopt").mkdir(exist_ok=True)
    body = json.dumps(policy) if policy is not None else POLICY_FILE.read_text()
    (tmp_path / "adopt" / POLICY_FILE.name).write_text(body)
    (tmp_path / "kit.toml").write_text(text)
    return tmp_path / "kit.toml"


def synth_source(cfg: KitConfig, outdir: Path, *, allow_destroy: bool = False) -> Stack:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from s3tables_kit.infra.app import build_app

    build_app(cfg, outdir=str(outdir), allow_destroy=allow_destroy).synth()
    stack: Stack = _without_metadata(json.loads((outdir / "stacks" / "source" / "cdk.tf.json").read_text()))
    return stack


def _without_metadata(node: Any) -> Any:
    """The stack without cdktf's `//` metadata keys."""
    if isinstance(node, dict):
        return {k: _without_metadata(v) for k, v in node.items() if k != "//"}
    if isinstance(node, list):
        return [_without_metadata(v) for v in node]
    return node


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    return synth_source(load_config(EXAMPLE), tmp_path_factory.mktemp("adopt"))


def imports(stack: Stack) -> dict[str, str]:
    """Import block target -> import id."""
    return {i["to"]: i["id"] for i in stack.get("import", [])}


def one(stack: Stack, rtype: str) -> tuple[str, dict[str, Any]]:
    (name, body), *rest = stack["resource"][rtype].items()
    assert not rest, f"more than one {rtype}"
    return f"{rtype}.{name}", body


def test_the_bucket_its_namespaces_and_its_policy_are_imported_never_created(source: Stack) -> None:
    bucket, body = one(source, "awscc_s3tables_table_bucket")
    policy, _ = one(source, "aws_s3tables_table_bucket_policy")
    namespaces = {
        b["namespace"]: f"aws_s3tables_namespace.{n}" for n, b in source["resource"]["aws_s3tables_namespace"].items()
    }
    assert imports(source) == {
        bucket: BUCKET,
        namespaces["orders"]: f"{BUCKET};orders",
        namespaces["clickstream"]: f"{BUCKET};clickstream",
        policy: BUCKET,
    }
    # Only what kit.toml states: the name and the encryption (which the replication role's grants follow); no tags
    # (awscc's tags are the whole set), storage class or unreferenced-file removal of the kit's over the bucket's own.
    assert sorted(body) == ["encryption_configuration", "lifecycle", "provider", "table_bucket_name"]
    assert body["encryption_configuration"] == {"sse_algorithm": "AES256"}
    for rtype in ("awscc_s3tables_table_bucket", "aws_s3tables_namespace", "aws_s3tables_table_bucket_policy"):
        for r in source["resource"][rtype].values():
            assert r["lifecycle"]["prevent_destroy"] is True
    assert "aws_s3tables_table" not in source["resource"]  # tables written outside Terraform stay outside it


def test_the_replica_and_an_unadopted_source_import_nothing(tmp_path: Path) -> None:
    cfg = load_config(variant(tmp_path, ("adopt = true\nbucket_policy = ", "# bucket_policy = ")))
    stack = synth_source(cfg, tmp_path / "out")
    assert "import" not in stack
    _, body = one(stack, "awscc_s3tables_table_bucket")
    assert {"storage_class_configuration", "unreferenced_file_removal", "tags"} <= set(body)


def test_a_stated_setting_is_set_on_the_adopted_bucket(tmp_path: Path) -> None:
    cfg = load_config(
        variant(
            tmp_path,
            (
                'encryption = { type = "sse-s3" }   # what',
                'storage_class = "INTELLIGENT_TIERING"\nencryption = { type = "sse-s3" }   # what',
            ),
        )
    )
    _, body = one(synth_source(cfg, tmp_path / "out"), "awscc_s3tables_table_bucket")
    assert body["storage_class_configuration"] == {"storage_class": "INTELLIGENT_TIERING"}
    assert "unreferenced_file_removal" not in body and "tags" not in body


def test_allow_destroy_never_lifts_the_protection_of_what_was_adopted(tmp_path: Path) -> None:
    stack = synth_source(load_config(EXAMPLE), tmp_path, allow_destroy=True)
    adopted = set(imports(stack))
    assert len(adopted) == 4
    for rtype, resources in stack["resource"].items():
        for name, body in resources.items():
            if f"{rtype}.{name}" in adopted:
                assert body["lifecycle"]["prevent_destroy"] is True, name
    _, replication = one(stack, "aws_s3tables_table_bucket_replication")
    assert replication["lifecycle"]["prevent_destroy"] is False


def test_a_declared_table_in_an_adopted_namespace_is_imported_and_keeps_its_settings(tmp_path: Path) -> None:
    declared = (
        'name = "orders"   # adopted',
        'name = "orders"\n\n[[source.namespaces.tables]]\nname = "daily"\n'
        'columns = [{ name = "order_id", type = "string" }]\n\n'
        '[[source.namespaces.tables]]\nname = "refunds"\ncolumns = [{ name = "refund_id", type = "string" }]\n'
        "snapshot_retention = { max_snapshot_age_hours = 240, min_snapshots_to_keep = 3 }\n\n"
        '[[source.namespaces]]\nname = "staging"\nadopt = false   # created by the kit\n# adopted',
    )
    cfg = load_config(variant(tmp_path, declared, ('mode = "bucket"', 'mode = "tables"\ntables = ["orders.daily"]')))
    stack = synth_source(cfg, tmp_path / "out")
    tables = {b["name"]: (f"aws_s3tables_table.{n}", b) for n, b in stack["resource"]["aws_s3tables_table"].items()}
    found = imports(stack)
    assert found[tables["daily"][0]] == f"{BUCKET};orders;daily"
    assert found[tables["refunds"][0]] == f"{BUCKET};orders;refunds"
    # The table's encryption is fixed at creation (a different one would replace it); its maintenance is its own
    # unless the table states a retention.
    daily, refunds = tables["daily"][1], tables["refunds"][1]
    assert "encryption_configuration" not in daily and "maintenance_configuration" not in daily
    assert refunds["maintenance_configuration"]["iceberg_snapshot_management"]["settings"] == {
        "max_snapshot_age_hours": 240,
        "min_snapshots_to_keep": 3,
    }
    staging = [
        f"aws_s3tables_namespace.{n}"
        for n, b in stack["resource"]["aws_s3tables_namespace"].items()
        if b["namespace"] == "staging"
    ]
    assert staging and staging[0] not in found
    # Table-level replication refers to the imported table.
    (replication,) = stack["resource"]["aws_s3tables_table_replication"].values()
    assert tables["daily"][0].split(".", 1)[1] in replication["table_arn"]


def test_the_merged_policy_is_rendered_and_deployed_with_both_statement_sets(source: Stack) -> None:
    rendered = json.loads((ROOT / "policies" / "rendered" / "adopt" / "source-bucket-policy.json").read_text())
    adopter = json.loads(POLICY_FILE.read_text())["Statement"]
    assert [s["Sid"] for s in rendered["Statement"]] == [
        "AthenaReaders",
        "IngestWriters",
        "DenySourceReplicationChange",
        "DenySourceBucketPolicyChange",
    ]
    assert rendered["Statement"][:2] == adopter  # kept as they are
    assert docset.build(load_config(EXAMPLE)).document("source-bucket-policy") == rendered
    _, deployed = one(source, "aws_s3tables_table_bucket_policy")
    assert json.loads(deployed["resource_policy"]) == rendered


OPEN = {"Effect": "Allow", "Principal": "*", "Action": "s3tables:*", "Resource": [BUCKET, f"{BUCKET}/table/*"]}
REFUSED = [
    ({**OPEN, "Sid": "OpenLake"}, "OpenLake", "KIT-ADOPT2 NoOpenProtectedAllow"),
    (
        {**OPEN, "Sid": "AnyoneDeletes", "Principal": {"AWS": "*"}, "Action": "s3tables:Delete*"},
        "AnyoneDeletes",
        "KIT-ADOPT2 NoOpenProtectedAllow",
    ),
    (
        {
            **OPEN,
            "Sid": "AnalyticsReplicates",
            "Principal": {"AWS": ANALYTICS},
            "Action": "s3tables:PutTableBucketReplication",
        },
        "AnalyticsReplicates",
        "KIT-ADOPT3 NoGuardedActionGrant",
    ),
    (
        {**OPEN, "Sid": "DenySourceBucketPolicyChange", "Principal": {"AWS": ANALYTICS}, "Action": "s3tables:GetTable"},
        "DenySourceBucketPolicyChange",
        "KIT-ADOPT1 AdoptedStatementSid",
    ),
    (
        {"Effect": "Allow", "Principal": {"AWS": ANALYTICS}, "Action": "s3tables:GetTable", "Resource": BUCKET},
        "(statement 2, no Sid)",
        "KIT-ADOPT1 AdoptedStatementSid",
    ),
    (
        {**OPEN, "Sid": "NoReadsForAnyone", "Effect": "Deny", "Action": "s3tables:GetTableData"},
        "NoReadsForAnyone",
        "KIT-ADOPT4 NoDenyOfTheKit",
    ),
    (
        {**OPEN, "Sid": "FreezeThePolicy", "Effect": "Deny", "Action": "s3tables:PutTableBucketPolicy"},
        "FreezeThePolicy",
        "KIT-ADOPT4 NoDenyOfTheKit",
    ),
    (
        {
            **OPEN,
            "Sid": "NoReplicationRole",
            "Effect": "Deny",
            "Action": "s3tables:Get*",
            "Condition": {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::111122223333:role/*-s3tables-replication"}},
        },
        "NoReplicationRole",
        "KIT-ADOPT4 NoDenyOfTheKit",
    ),
    (
        {
            **OPEN,
            "Sid": "PartnerReads",
            "Principal": {"AWS": "arn:aws:iam::999988887777:root"},
            "Action": "s3tables:GetTable",
        },
        "PartnerReads",
        "KIT-ADOPT5 NoGrantOutsideTheOrganization",
    ),
    (
        {**OPEN, "Sid": "EveryoneReads", "Principal": "*", "Action": "s3tables:GetTable"},
        "EveryoneReads",
        "KIT-ADOPT5 NoGrantOutsideTheOrganization",
    ),
    (
        {**OPEN, "Sid": "AnalyticsTags", "Principal": {"AWS": ANALYTICS}, "Action": "s3tables:TagResource"},
        "AnalyticsTags",
        "KIT-ADOPT6 NoTablePolicyOrTagGrant",
    ),
    (
        {**OPEN, "Sid": "AnalyticsTablePolicy", "Principal": {"AWS": ANALYTICS}, "Action": "s3tables:PutTablePolicy"},
        "AnalyticsTablePolicy",
        "KIT-ADOPT6 NoTablePolicyOrTagGrant",
    ),
]


def athena_and(stmt: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [json.loads(POLICY_FILE.read_text())["Statement"][0], stmt]}


@pytest.mark.parametrize(("stmt", "sid", "rule"), REFUSED, ids=[r[2].split()[0] + "-" + r[1] for r in REFUSED])
def test_an_adopted_statement_that_defeats_a_protection_is_refused_naming_sid_and_rule(
    tmp_path: Path, stmt: dict[str, Any], sid: str, rule: str
) -> None:
    cfg = load_config(variant(tmp_path, policy=athena_and(stmt)))
    with pytest.raises(AdoptedStatementRefused) as err:
        docset.build(cfg)
    assert f"{sid}: [{rule}]" in str(err.value)
    assert "AthenaReaders" not in str(err.value)  # the statement that passes is not named


def test_the_synth_entry_point_refuses_it_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from s3tables_kit.infra import main

    config = variant(tmp_path, policy=athena_and({**OPEN, "Sid": "OpenLake"}))
    monkeypatch.setenv("KIT_CONFIG", str(config))
    monkeypatch.setenv("KIT_OUTDIR", str(tmp_path / "out"))
    assert main.main() == 2
    assert "OpenLake: [KIT-ADOPT2 NoOpenProtectedAllow]" in capsys.readouterr().err
    assert not list((tmp_path / "out").rglob("cdk.tf.json"))  # no stack written


def test_reads_for_the_organization_pass_and_a_conditional_deny_of_replication_is_warned_with_its_sid(
    tmp_path: Path,
) -> None:
    org_reads = {
        **OPEN, "Sid": "OrgReads", "Principal": "*", "Action": "s3tables:GetTable",
        "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-abc123def4"}},
    }  # fmt: skip
    no_vpc = {
        **OPEN, "Sid": "OnlyFromTheVpc", "Effect": "Deny", "Principal": "*", "Action": "s3tables:GetTableData",
        "Condition": {"StringNotEquals": {"aws:SourceVpce": "vpce-0abc"}},
    }  # fmt: skip
    policy = athena_and(org_reads)
    policy["Statement"].append(no_vpc)
    cfg = load_config(variant(tmp_path, policy=policy))
    ds = docset.build(cfg)
    assert [s["Sid"] for s in ds.document("source-bucket-policy")["Statement"]][:3] == [
        "AthenaReaders", "OrgReads", "OnlyFromTheVpc",
    ]  # fmt: skip
    (kept,) = [d.attached_to for d in ds.docs if d.name == "source-bucket-policy"]
    assert "warning: OnlyFromTheVpc: [KIT-ADOPT7 ConditionalDenyOfReplication]" in kept
    assert "OrgReads: [" not in kept


def test_a_conditional_deny_and_a_named_grant_are_kept(tmp_path: Path) -> None:
    tls = {
        "Sid": "TlsOnly",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3tables:*",
        "Resource": [BUCKET, f"{BUCKET}/table/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    contractors = {
        **tls,
        "Sid": "NoContractorReads",
        "Condition": {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::111122223333:role/contractor-*"}},
    }
    policy = athena_and(tls)
    policy["Statement"].append(contractors)
    doc = docset.build(load_config(variant(tmp_path, policy=policy))).document("source-bucket-policy")
    assert [s["Sid"] for s in doc["Statement"]][:3] == ["AthenaReaders", "TlsOnly", "NoContractorReads"]


@pytest.mark.parametrize(
    ("replace", "policy", "field", "words"),
    [
        (("adopt = true\n", ""), None, "source.bucket_policy", "only an adopted bucket"),
        (('encryption = { type = "sse-s3" }   # what', 'encryption = { type = "kms", kms_key = "create" }  # what'),
         None, "source.encryption.kms_key", "re-point an existing bucket"),
        (("bucket-policy-sales-lake.json", "missing.json"), None, "source.bucket_policy", "not found"),
        (("", ""), {"Version": "2012-10-17"}, "source.bucket_policy", "with a Statement list"),
        (('name = "orders"   # adopted', 'name = "orders"\nadopt = true   # adopted'), None, None, None),
    ],
    ids=["policy-without-adopt", "created-key", "missing-file", "no-statements", "namespace-adopt-true"],
)  # fmt: skip
def test_the_adoption_keys_are_checked_at_load(
    tmp_path: Path, replace: tuple[str, str], policy: dict[str, Any] | None, field: str | None, words: str | None
) -> None:
    path = variant(tmp_path, replace, policy=policy)
    if field is None or words is None:
        assert load_config(path).sources[0].adopt  # an explicit adopt = true on a namespace of an adopted bucket
        return
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert any(i.field == field and words in i.rule for i in err.value.issues), err.value.issues


def test_a_namespace_cannot_be_adopted_in_a_bucket_the_kit_creates(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        ("adopt = true\nbucket_policy = ", "# bucket_policy = "),
        ('name = "orders"   # adopted', 'name = "orders"\nadopt = true   # adopted'),
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert [i.field for i in err.value.issues] == ["source.namespaces[0].adopt"]


def test_an_existing_replication_and_its_replica_are_imported_not_created(tmp_path: Path) -> None:
    """The bucket replicates already to `sales-lake-us-west-2`: the source stack imports the bucket-level
    configuration (updated in place: no moment without replication) and the replica stack imports the replica bucket,
    which keeps the kit's protections (its policy is stated: the kit's replica policy)."""
    replica_arn = "arn:aws:s3tables:us-west-2:111122223333:bucket/sales-lake-us-west-2"
    cfg = load_config(
        variant(
            tmp_path,
            ("adopt = true\n", f'adopt = true\nexisting_destinations = ["{replica_arn}"]\n'),
            ('bucket = "sales-lake-us-west-2"\n', 'bucket = "sales-lake-us-west-2"\nadopt = true\n'),
            (
                'encryption = { type = "sse-s3" }\nsnapshot_retention = { max_snapshot_age_hours = 2160',
                'adopt_changes = ["bucket_policy"]\nencryption = { type = "sse-s3" }\n'
                "snapshot_retention = { max_snapshot_age_hours = 2160",
            ),
        )
    )
    source = synth_source(cfg, tmp_path / "out")
    takeover, body = one(source, REPLICATION)
    assert imports(source)[takeover] == BUCKET and body["lifecycle"]["prevent_destroy"] is True
    # what `adopt-gate --take-over` imports alone and gives its live token (s3tables_kit.infra.takeover)
    assert [(a, k.rtype, i) for a, k, i in replication_imports([source])] == [(takeover, REPLICATION, BUCKET)]
    replica = _without_metadata(
        json.loads((tmp_path / "out" / "stacks" / "replica-sales-lake-us-west-2" / "cdk.tf.json").read_text())
    )
    bucket, _ = one(replica, "awscc_s3tables_table_bucket")
    assert imports(replica) == {bucket: replica_arn}
    assert "aws_s3tables_table_bucket_policy" in replica["resource"]  # the kit's replica protections, as stated
