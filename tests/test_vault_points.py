"""Which backup points a restore trusts (`jobs/vault/points.py`, pure) and the point key on the stand-in's KMS
(`jobs/vault/mac.py`): a forged, malformed, future-dated or unversioned point object is refused with its reason and
skipped, "latest" is the newest verified point, and one bad object never hides the genuine points."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from harness.world import create_point_key
from s3tables_kit.jobs.rehearse_vault import VaultRow, render_rows, vault_metrics
from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint, choose_point
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.points import PointRefused, scan_points, verify_point
from tests.ops_fixtures import OpsEnv

T0 = datetime(2026, 12, 1, tzinfo=UTC)
SECRET = b"the backup role's key"


def _mac(body: bytes) -> str:  # stands in for KMS GenerateMac in the pure tests (KMS itself: the last test)
    return hmac.new(SECRET, body, hashlib.sha256).hexdigest()


def _mac_ok(body: bytes, mac: str) -> bool:
    return hmac.compare_digest(_mac(body), mac)


def _point(sid: int, at: datetime, *, signed: bool = True, version: str = "v") -> BackupPoint:
    meta, restore = f"metadata/{sid}.metadata.json", f"restorable/{sid}/r/metadata/{sid}.metadata.json"
    files = (BackupFile(meta, "metadata", 5, 1, version), BackupFile(restore, "restorable", 6, 2, version))
    p = BackupPoint("s", "t", "u", sid, int(at.timestamp() * 1000), meta, restore, "s3://r/t", "arn:r",
                    at.isoformat(timespec="seconds"), files)  # fmt: skip
    return replace(p, mac=_mac(p.canonical())) if signed else p


def _obj(p: BackupPoint, written: datetime, raw: bytes | None = None) -> tuple[str, object]:
    return p.key, lambda: (p.to_json().encode() if raw is None else raw, written)


def test_a_genuine_point_verifies() -> None:
    p = _point(1, T0)
    assert verify_point(p.to_json().encode(), p.key, T0 + timedelta(seconds=5), _mac_ok, versioned=True) == p


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: (_point(1, T0, signed=False), T0, None), "MAC is missing"),
        (lambda: (replace(_point(1, T0), mac=_mac(b"another point")), T0, None), "not the vault point key"),
        (
            lambda: (replace(_point(1, T0), source="arn:other"), T0, None),
            "not the vault point key",
        ),  # edited after signing
        (lambda: (_point(1, T0 + timedelta(days=30)), T0, None), "after S3 wrote its object"),
        (lambda: (_point(1, T0, version=""), T0, None), "without an S3 version id"),
        (lambda: (_point(1, T0), T0, b"{not json"), "malformed"),
        (lambda: (_point(1, T0), T0, b'{"format": 1}'), "malformed"),
    ],
)
def test_what_is_refused(make: object, why: str) -> None:
    p, written, raw = make()  # type: ignore[operator]
    body = p.to_json().encode() if raw is None else raw
    with pytest.raises(PointRefused, match=why):
        verify_point(body, _point(1, T0).key, written, _mac_ok, versioned=True)


def test_a_point_at_another_key_and_a_minute_of_clock_skew() -> None:
    p = _point(1, T0)
    with pytest.raises(PointRefused, match="not its own key"):
        verify_point(p.to_json().encode(), _point(2, T0).key, T0, _mac_ok, versioned=True)
    # the writer's clock 59 s ahead of S3's is tolerated (Iceberg's one minute); 61 s is not
    assert verify_point(p.to_json().encode(), p.key, T0 - timedelta(seconds=59), _mac_ok, versioned=True) == p
    with pytest.raises(PointRefused):
        verify_point(p.to_json().encode(), p.key, T0 - timedelta(seconds=61), _mac_ok, versioned=True)


def test_refused_points_are_skipped_reported_and_latest_is_the_newest_verified() -> None:
    genuine = [_point(1, T0), _point(2, T0 + timedelta(hours=1))]
    future = _point(9, T0 + timedelta(days=365))  # signed, but dated far after S3 wrote it: would be "latest"
    forged = _point(8, T0 + timedelta(hours=2), signed=False)
    malformed = _point(7, T0)

    def unreadable() -> tuple[bytes, datetime]:
        raise OSError("access denied")

    objects = [
        _obj(genuine[0], T0),
        _obj(future, T0 + timedelta(hours=3)),
        _obj(forged, T0 + timedelta(hours=2)),
        _obj(malformed, T0, b"\x00garbage"),
        (_point(6, T0).key, unreadable),
        _obj(genuine[1], T0 + timedelta(hours=1)),
    ]
    scan = scan_points(objects, _mac_ok, versioned=True)  # type: ignore[arg-type]
    assert scan.points == tuple(genuine)
    assert [r.key for r in scan.refused] == [future.key, forged.key, malformed.key, _point(6, T0).key]
    assert choose_point(scan.points) == genuine[1]
    assert all(line.startswith("refused backup point v1/tables/s/t/u/points/") for line in scan.findings())
    # the rehearsal reports them as findings and counts them, without failing the row
    row = VaultRow("s.t", snapshot_id=2, verdict="verified", exit_code=0, refused=scan.findings())
    assert row.ok and sum("FINDING: refused backup point" in line for line in render_rows([row])) == 4
    assert vault_metrics([row])["VaultPointsRefused"] == (4.0, "Count")


def test_a_local_directory_has_no_versions_and_no_key() -> None:
    p = _point(1, T0, signed=False, version="")
    assert verify_point(p.to_json().encode(), p.key, T0, None, versioned=False) == p


def test_the_point_key_on_the_stand_in_kms(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    arn = create_point_key(boto3.client("kms", region_name="us-east-1", endpoint_url=ops_env.endpoint))
    key = PointKey(arn, "us-east-1", ops_env.endpoint)
    p = _point(1, T0, signed=False)
    signed = replace(p, mac=key.sign(p.canonical()))
    assert verify_point(signed.to_json().encode(), p.key, T0, key.verify, versioned=True) == signed
    other = PointKey(create_point_key(key.kms()), "us-east-1", ops_env.endpoint)  # an HMAC key of the attacker's
    forged = replace(p, mac=other.sign(p.canonical()))
    with pytest.raises(PointRefused, match="not the vault point key"):
        verify_point(forged.to_json().encode(), p.key, T0, key.verify, versioned=True)
    assert not key.verify(p.canonical(), "not base64!")


def test_a_restore_on_emr_is_given_the_outputs_point_key() -> None:
    from pathlib import Path

    from s3tables_kit.jobs.emr_submit import remote_args
    from s3tables_kit.topology.config import load_config
    from s3tables_kit.topology.deploy_outputs import outputs_doc
    from s3tables_kit.topology.outputs import parse_outputs

    doc = outputs_doc(load_config(Path(__file__).resolve().parents[1] / "examples/seed.toml"))
    doc["vault"]["kit_vault"]["point_key_arn"] = key = "arn:aws:kms:us-west-2:111122223333:key/points"
    args = remote_args(parse_outputs(doc), ["--from-vault", "--table", "a.b"])
    assert args[args.index("--vault-point-key") + 1] == key
    named = remote_args(parse_outputs(doc), ["--from-vault", "--table", "a.b", "--vault-point-key", "k"])
    assert named.count("--vault-point-key") == 1
