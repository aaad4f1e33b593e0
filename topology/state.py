"""The `[state]` section of `kit.toml`: where Terraform keeps each stack's state. Imported by `topology/model.py`
(the root `KitConfig.state` field); imports nothing of the kit but the rules.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from s3tables_kit.topology.rules import check_optional, check_region


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


_STATE_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
# The optional keys of the state with a required shape: the pattern, and the message when the value given (`{v!r}`)
# does not match it.
_SHAPES = {
    "key_prefix": (
        re.compile(r"^[A-Za-z0-9_.=-]+(/[A-Za-z0-9_.=-]+)*$"),
        "key_prefix {v!r} must be path segments of letters, digits, '_', '.', '=', '-' separated by single '/', "
        "without a leading or trailing '/'",
    ),
    # Terraform's S3 backend accepts a key ARN only with a real key id: a UUID (version 1-5, RFC 4122 variant) or a
    # multi-Region key id (terraform internal/backend/remote-state/s3/validate.go); a made-up id fails `terraform init`.
    "kms_key_arn": (
        re.compile(
            r"^arn:aws(-cn|-us-gov)?:kms:([a-z0-9-]+):(\d{12}):key/"
            r"([a-f0-9]{8}-[a-f0-9]{4}-[1-5][a-f0-9]{3}-[ab89][a-f0-9]{3}-[a-f0-9]{12}|mrk-[a-f0-9]{32})$"
        ),
        "kms_key_arn {v!r} must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>) whose id is a key id as "
        "KMS issues it (a UUID or mrk-...): Terraform's S3 backend rejects anything else",
    ),
}

# The switches of the state that are there to be written, not turned off, and why each must stay on.
_CANNOT_TURN_OFF = {
    "use_lockfile": "state locking cannot be turned off: two concurrent applies would corrupt the state",
    "encrypt": "state encryption cannot be turned off: the state holds every resource's attributes",
}


class State(_Frozen):
    """Where Terraform keeps each stack's state (`[state]` in kit.toml).

    `local` (default): `terraform.<stack>.tfstate` in the working directory cdktf runs in (written as a path relative
    to `cdktf.out/stacks/<stack>/`, so the synthesized files carry no machine path). `s3`: one object per stack,
    `<key_prefix>/<stack>.tfstate` in `bucket` (`key_prefix` defaults to the kit name), always encrypted and always
    locked with Terraform's native S3 lock file (`use_lockfile`, Terraform >= 1.10); `kms_key_arn` optionally
    encrypts the state with a customer managed key in the bucket's Region."""

    backend: Literal["local", "s3"] = Field(
        default="local",
        description='"local": `terraform.<stack>.tfstate` in the directory cdktf runs in; "s3": one object per stack '
        "in `bucket`, encrypted and locked.",
    )
    bucket: str | None = Field(default=None, description='With backend = "s3": the S3 bucket that holds the state.')
    key_prefix: str | None = Field(
        default=None,
        description="Prefix of each stack's state key, `<key_prefix>/<stack>.tfstate`; unset, the kit name.",
    )
    region: str | None = Field(default=None, description='With backend = "s3": the Region of the state bucket.')
    use_lockfile: bool = Field(
        default=True,
        description="Terraform's native S3 lock file (Terraform 1.10 or later); cannot be turned off.",
    )
    encrypt: bool = Field(default=True, description="Encryption of the state objects; cannot be turned off.")
    kms_key_arn: str | None = Field(
        default=None,
        description="ARN of a customer managed KMS key in the state bucket's Region that encrypts the state; unset, "
        "the bucket's encryption applies.",
    )

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        if v is not None and (not _STATE_BUCKET_RE.match(v) or ".." in v):
            raise ValueError(
                f"state bucket {v!r} is not an S3 bucket name (3-63 lowercase letters, digits, '.' and '-', "
                "starting and ending with a letter or digit)"
            )
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        return None if v is None else check_region(v)

    @field_validator("use_lockfile", "encrypt")
    @classmethod
    def _stays_on(cls, v: bool, info: ValidationInfo) -> bool:
        if not v:
            raise ValueError(_CANNOT_TURN_OFF[info.field_name or ""])
        return v

    @field_validator("key_prefix", "kms_key_arn")
    @classmethod
    def _shaped(cls, v: str | None, info: ValidationInfo) -> str | None:
        pattern, message = _SHAPES[info.field_name or ""]
        return check_optional(v, pattern, message.format(v=v))
