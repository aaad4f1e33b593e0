"""The vault's point key: a KMS HMAC key (`HMAC_256`, `GENERATE_VERIFY_MAC`) whose `GenerateMac` only the backup role
may call and whose `VerifyMac` the recovery role may. A point's MAC is over its canonical bytes
(`BackupPoint.canonical`), so a point object written by anyone else (a new version, a forged point) does not verify:
the key material never leaves KMS (docs/aws-facts.md#kms-hmac-keys)."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from s3tables_kit.jobs.kernel import sdk

MAC_ALGORITHM = "HMAC_SHA_256"
DOMAIN = b"s3tables-kit backup point v2 sha256:"  # KMS takes at most 4,096 bytes: the MAC is over a digest


def mac_message(canonical: bytes) -> bytes:
    """What KMS MACs for a point: a domain tag and the SHA-256 of its canonical bytes (a point lists every file)."""
    return DOMAIN + hashlib.sha256(canonical).hexdigest().encode()


@dataclass
class PointKey:
    """The point key `key_id` (its ARN) in `region` (the vault's), through `endpoint` on the local stand-in."""

    key_id: str
    region: str | None = None
    endpoint: str | None = None
    client: Any = field(default=None, repr=False, compare=False)

    def kms(self) -> Any:
        if self.client is None:
            self.client = sdk.client("kms", self.region, self.endpoint)
        return self.client

    def sign(self, canonical: bytes) -> str:
        """The base64 MAC of a point's canonical bytes (GenerateMac: the backup role's)."""
        message = mac_message(canonical)
        r = self.kms().generate_mac(KeyId=self.key_id, Message=message, MacAlgorithm=MAC_ALGORITHM)
        return base64.b64encode(r["Mac"]).decode()

    def verify(self, canonical: bytes, mac: str) -> bool:
        """Whether `mac` (base64) is this key's MAC of a point's canonical bytes (VerifyMac: a wrong MAC is False, any
        other failure of the call, such as access denied, raises)."""
        message = mac_message(canonical)
        try:
            raw = base64.b64decode(mac, validate=True)
        except ValueError:
            return False
        try:
            r = self.kms().verify_mac(KeyId=self.key_id, Message=message, MacAlgorithm=MAC_ALGORITHM, Mac=raw)
        except Exception as e:
            if sdk.error_code(e) == "KMSInvalidMacException":
                return False
            raise
        return bool(r.get("MacValid"))
