"""Writes into the deployed vault bucket as the principals an attacker of the vault's account would use, for the
detection drill's forged and malformed points (`harness.drills.detection`).

The stand-in evaluates the vault's bucket policy with the caller's identity (`emulator.bucket_policy`): each writer
is an `sts:AssumeRole` session of its role, so the policy decides as AWS would. The vault account's administrator
and break-glass are refused outright; the backup role, the one writer the policy admits, is refused a write without
`If-None-Match`, a retain-until beyond the ceiling and a second version of a key. What that one door lets through
(an object the backup role did not compose: a made-up MAC, or no point at all) is then the reader's to refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from harness.deploy import client
from s3tables_kit.topology.backup import backup_role_arn
from s3tables_kit.topology.config import KitConfig

WRITTEN = "written"


@dataclass(frozen=True)
class Attempt:
    who: str
    what: str
    expected: str  # WRITTEN, or the error code AWS answers
    outcome: str

    @property
    def ok(self) -> bool:
        return self.outcome == self.expected

    def line(self) -> str:
        return f"{self.who}: {self.what}: {self.outcome}" + ("" if self.ok else f" (expected {self.expected})")


@dataclass
class Vault:
    """The deployed vault the techniques write to, and every attempt made so far."""

    endpoint: str
    cfg: KitConfig
    bucket: str
    region: str
    attempts: list[Attempt] = field(default_factory=list)
    _clients: dict[str, Any] = field(default_factory=dict)

    def as_role(self, role_arn: str) -> Any:
        """An S3 client of an `sts:AssumeRole` session of `role_arn` (the stand-in's STS)."""
        if role_arn not in self._clients:
            got = client(self.endpoint, "sts", self.region).assume_role(RoleArn=role_arn, RoleSessionName="drill")
            c = got["Credentials"]
            session = boto3.session.Session(
                aws_access_key_id=c["AccessKeyId"],
                aws_secret_access_key=c["SecretAccessKey"],
                aws_session_token=c["SessionToken"],
                region_name=self.region,
            )
            config = Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 1})
            self._clients[role_arn] = session.client("s3", endpoint_url=self.endpoint, config=config)
        return self._clients[role_arn]

    def attackers(self) -> dict[str, str]:
        """who -> role ARN: the vault account's administrator, break-glass, and the backup role."""
        assert self.cfg.vault is not None
        account = self.cfg.vault.account_id
        return {
            "vault account administrator": f"arn:aws:iam::{account}:role/OrganizationAccountAccessRole",
            "break-glass": self.cfg.protection.break_glass_principals[0],
            "backup role": backup_role_arn(self.cfg),
        }

    def _try(self, who: str, what: str, expected: str, call: Callable[[Any], Any]) -> bool:
        try:
            call(self.as_role(self.attackers()[who]))
            outcome = WRITTEN
        except ClientError as exc:
            outcome = str(exc.response.get("Error", {}).get("Code", ""))
        self.attempts.append(Attempt(who, what, expected, outcome))
        return outcome == WRITTEN

    def forge(self, key: str, body: bytes) -> bool:
        """`body` under `key` through every door: refused to all but the backup role's conditional write; whether
        the object is in the vault afterwards."""

        def put(**kw: Any) -> Callable[[Any], Any]:
            return lambda s3: s3.put_object(Bucket=self.bucket, Key=key, Body=body, ChecksumAlgorithm="CRC32", **kw)

        assert self.cfg.vault is not None
        far = datetime.now(UTC) + timedelta(days=self.cfg.vault.retention_days + 365)
        for who in ("vault account administrator", "break-glass"):
            self._try(who, "a conditional write", "AccessDenied", put(IfNoneMatch="*"))
        self._try("backup role", "a write without If-None-Match", "AccessDenied", put())
        beyond = put(IfNoneMatch="*", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=far)
        self._try("backup role", "a retain-until a year beyond the retention", "AccessDenied", beyond)
        written = self._try("backup role", "a conditional write", WRITTEN, put(IfNoneMatch="*"))
        self._try("backup role", "a second version of the same key", "PreconditionFailed", put(IfNoneMatch="*"))
        return written

    def findings(self) -> set[tuple[str, str]]:
        """("vault-write-refused", ...) when every write the policy forbids was refused and the one door let the
        object through (else nothing: the technique is missed)."""
        if not self.attempts or not all(a.ok for a in self.attempts):
            return set()
        refused = sum(a.expected != WRITTEN for a in self.attempts)
        return {("vault-write-refused", f"{refused} forbidden writes refused by the vault's bucket policy")}

    def report(self) -> list[str]:
        return [a.line() for a in self.attempts]
