"""Object Lock on the local stand-in, as the vault rests on it (docs/decisions/0034-backup-vault.md): in a bucket
whose default retention is COMPLIANCE, a written version cannot be deleted, nor its retention shortened or weakened
to GOVERNANCE, by anyone; its retention can be extended; a delete without a version id leaves a delete marker, and
the version stays readable and is restored by removing the marker. The emulator over HTTP, with plain boto3."""

from __future__ import annotations

import datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from emulator.moto_patches import weakens_lock
from harness.world import create_vault_bucket

NOW = datetime.datetime.now(datetime.UTC)


def _code(call: Any) -> str:
    with pytest.raises(ClientError) as err:
        call()
    return str(err.value.response["Error"]["Code"])


@pytest.fixture
def vault(moto_endpoint: str) -> tuple[Any, str]:
    """A vault-like bucket: Object Lock enabled at creation, a COMPLIANCE default retention of one day."""
    s3 = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(s3={"addressing_style": "path"}),
    )
    return s3, create_vault_bucket(s3, days=1)


def test_a_locked_version_is_neither_deleted_nor_its_retention_shortened(vault: tuple[Any, str]) -> None:
    s3, bucket = vault
    key = "v1/tables/analytics/orders/0f3c/data/00000-0-a.parquet"
    version = s3.put_object(Bucket=bucket, Key=key, Body=b"parquet bytes", ChecksumAlgorithm="SHA256")["VersionId"]
    held = s3.get_object_retention(Bucket=bucket, Key=key, VersionId=version)["Retention"]
    assert held["Mode"] == "COMPLIANCE"
    until = held["RetainUntilDate"]
    assert until > NOW + datetime.timedelta(hours=23)

    # the lock, not a policy: refused to every caller (these requests carry no policy at all)
    assert _code(lambda: s3.delete_object(Bucket=bucket, Key=key, VersionId=version)) == "AccessDenied"
    batch = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key, "VersionId": version}]})
    assert [e["Code"] for e in batch.get("Errors", [])] == ["AccessDenied"]
    for mode, date in (("COMPLIANCE", NOW + datetime.timedelta(hours=1)), ("GOVERNANCE", until)):
        retention = {"Mode": mode, "RetainUntilDate": date}
        call = lambda r=retention: s3.put_object_retention(Bucket=bucket, Key=key, VersionId=version, Retention=r)  # noqa: E731
        assert _code(call) == "AccessDenied", mode
    assert s3.get_object_retention(Bucket=bucket, Key=key, VersionId=version)["Retention"]["RetainUntilDate"] == until

    # extending is allowed (the backup job extends the files a new backup point reuses)
    later = (until + datetime.timedelta(days=30)).replace(microsecond=0)
    s3.put_object_retention(
        Bucket=bucket, Key=key, VersionId=version, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later}
    )
    assert s3.get_object_retention(Bucket=bucket, Key=key, VersionId=version)["Retention"]["RetainUntilDate"] == later

    # a delete without a version id only hides the object behind a marker: the version stays, and comes back
    marker = s3.delete_object(Bucket=bucket, Key=key)
    assert marker["DeleteMarker"] is True
    assert _code(lambda: s3.get_object(Bucket=bucket, Key=key)) == "NoSuchKey"
    assert s3.get_object(Bucket=bucket, Key=key, VersionId=version)["Body"].read() == b"parquet bytes"
    s3.delete_object(Bucket=bucket, Key=key, VersionId=marker["VersionId"])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"parquet bytes"


@pytest.mark.parametrize(
    ("current", "wanted", "bypass", "weakens"),
    [
        (("COMPLIANCE", "2999-01-01T00:00:00Z"), ("COMPLIANCE", "2998-01-01T00:00:00Z"), False, True),
        (("COMPLIANCE", "2999-01-01T00:00:00Z"), ("COMPLIANCE", "2999-01-01T00:00:00.000Z"), False, False),
        (("COMPLIANCE", "2999-01-01T00:00:00Z"), ("GOVERNANCE", "2999-06-01T00:00:00Z"), True, True),
        (("COMPLIANCE", "2999-01-01T00:00:00Z"), ("COMPLIANCE", "3000-01-01T00:00:00Z"), False, False),
        (("GOVERNANCE", "2999-01-01T00:00:00Z"), ("GOVERNANCE", "2998-01-01T00:00:00Z"), False, True),
        (("GOVERNANCE", "2999-01-01T00:00:00Z"), ("GOVERNANCE", "2998-01-01T00:00:00Z"), True, False),
        (("COMPLIANCE", "2000-01-01T00:00:00Z"), ("GOVERNANCE", "2000-01-02T00:00:00Z"), False, False),  # expired
        ((None, None), ("GOVERNANCE", "2999-01-01T00:00:00Z"), False, False),  # never locked
    ],
)
def test_which_retention_changes_the_stand_in_refuses(
    current: tuple[str | None, str | None], wanted: tuple[str | None, str | None], bypass: bool, weakens: bool
) -> None:
    assert weakens_lock(current, wanted, bypass=bypass) is weakens
