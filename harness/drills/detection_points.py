"""The detection drill's techniques on writer-chosen times and vault points (`harness/drills/detection.py`): a
commit dated in the future, a backdated commit before an `--as-of` rehearsal, a forged vault point and a malformed
one; and the tools whose findings catch them (`recover --dry-run --as-of`, `recover --from-vault --list-points`)."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from harness.drills.alarms import environ

if TYPE_CHECKING:
    from harness.drills.detection import Drill, Finding, World

DAY_MS = 86_400_000
FUTURE_TABLE, BACKDATED_TABLE = "analytics.orders", "analytics.customers"


def _commit_dated(drill: Drill, qualified: str, offset_ms: int) -> None:
    from harness.drills.detection import commit

    bucket, _ = drill.world.source_tables()[qualified]
    commit(drill.world, bucket, qualified, int(time.time() * 1000) + offset_ms)
    for src in drill.world.cfg.sources:
        drill.world.control.replicate(source_bucket_arn=src.bucket_arn)


def future_dated_commit(drill: Drill) -> None:
    """(c) A writer's commit whose snapshot is dated two days ahead, replicated."""
    _commit_dated(drill, FUTURE_TABLE, 2 * DAY_MS)


def backdated_commit(drill: Drill) -> None:
    """(d) A writer's commit dated a day back appended last, replicated: by log order, "the state as of" every later
    instant."""
    _commit_dated(drill, BACKDATED_TABLE, -DAY_MS)


def as_of_findings(world: World, table: str = BACKDATED_TABLE) -> set[Finding]:
    """`recover --dry-run --as-of <now>` of `table` (the rehearsal's plan): a refusal is the finding."""
    from s3tables_kit.jobs.recover.cli import main as recover

    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    with tempfile.TemporaryDirectory() as tmp:
        outputs = Path(tmp) / "outputs.json"
        outputs.write_text(json.dumps(world.outputs_doc))
        args = ["--outputs", str(outputs), "--endpoint-url", world.endpoint, "--table", table,
                "--as-of", now, "--dry-run"]  # fmt: skip
        err = io.StringIO()
        with environ(world.env()), contextlib.redirect_stdout(err), contextlib.redirect_stderr(err):
            code = recover(args)
    said = err.getvalue().strip().splitlines()
    refused = [line for line in said if "refused" in line]
    return {("as-of-refused", refused[0])} if code != 0 and refused else set()


def _vault(world: World) -> tuple[str, str, str]:
    """(bucket, Region, point key ARN) of the vault the techniques write to: a bucket made as the vault drill makes
    it (Object Lock, COMPLIANCE) beside the deployed vault, whose bucket policy the stand-in cannot evaluate for a
    writer (moto reads `aws:PrincipalArn` as absent, so the policy's Deny refuses every PutObject, the backup role's
    too); the deployed vault's point key."""
    from harness.world import create_vault_bucket
    from s3tables_kit.topology.backup import VAULT_STACK_ID
    from s3tables_kit.topology.outputs import OUTPUT_VAULT

    v = world.outputs_doc[VAULT_STACK_ID][OUTPUT_VAULT]
    bucket, s3 = f"{v['bucket_name']}-drill", world.client("s3", v["region"])
    if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        create_vault_bucket(s3, days=1, bucket=bucket, region=v["region"])
    return bucket, v["region"], v["point_key_arn"]


def _point_prefix(world: World) -> str:
    from s3tables_kit.jobs.vault.layout import table_prefix

    ns, name = FUTURE_TABLE.split(".")
    rep = world.cfg.recovery_replica
    table = world.client("s3tables", rep.region).get_table(tableBucketARN=rep.bucket_arn, namespace=ns, name=name)
    return table_prefix(ns, name, table["tableARN"].rsplit("/", 1)[-1])


def forged_point(drill: Drill) -> None:
    """(e) A point object the backup role did not write, dated far ahead so that it would be "latest" for every
    restore: well formed, with a MAC the attacker made up (it holds no GenerateMac on the point key)."""
    from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint

    bucket, region, _ = _vault(drill.world)
    prefix, sid = _point_prefix(drill.world), 777
    ns, name = FUTURE_TABLE.split(".")
    ahead = int(time.time() * 1000) + 30 * DAY_MS
    meta, restorable = "metadata/forged.metadata.json", f"restorable/{sid}/run/metadata/forged.metadata.json"
    files = (BackupFile(meta, "metadata", 10, 1, "v"), BackupFile(restorable, "restorable", 10, 1, "v"))
    point = BackupPoint(ns, name, prefix.rstrip("/").rsplit("/", 1)[-1], sid, ahead, meta, restorable,
                        "s3://elsewhere", "attacker", datetime.now(UTC).isoformat(), files, mac="Zm9yZ2Vk")  # fmt: skip
    drill.world.client("s3", region).put_object(
        Bucket=bucket, Key=point.key, Body=point.to_json().encode(), ChecksumAlgorithm="CRC32"
    )


def malformed_point(drill: Drill) -> None:
    """(f) An object under the table's `points/` that is no point at all (once, it made every restore fail)."""
    bucket, region, _ = _vault(drill.world)
    key = f"{_point_prefix(drill.world)}points/666.json"
    drill.world.client("s3", region).put_object(Bucket=bucket, Key=key, Body=b"{not a point", ChecksumAlgorithm="CRC32")


def point_findings(world: World) -> set[Finding]:
    """`recover --from-vault --list-points` of the table (what a restore and the vault rehearsal read first): each
    refused point is a finding, and the listing must not fail."""
    from s3tables_kit.jobs.vault.mac import PointKey
    from s3tables_kit.jobs.vault.reader import VaultReader, list_points

    bucket, region, key = _vault(world)
    ns, name = FUTURE_TABLE.split(".")
    with environ(world.env()):
        reader = VaultReader(f"s3://{bucket}", region, world.endpoint, point_key=PointKey(key, region, world.endpoint))
        scan = list_points(reader, ns, name)
    return {("point-refused", r.line()) for r in scan.refused}
