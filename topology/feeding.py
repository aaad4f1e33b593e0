"""The `feeding_account` key of a replica: one account's bucket of a vault that other accounts feed (mixed into
`s3tables_kit.topology.model.Replica`; its rules, which read the whole topology, are
`s3tables_kit.topology.vault_accounts`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from s3tables_kit.topology.rules import check_account


class VaultAccountBucket(BaseModel):
    """The key of a replica that is one account's bucket of a vault shared with other accounts."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    feeding_account: str | None = Field(
        default=None,
        description="The account whose bucket this is in a vault that other accounts feed: only sources of this "
        "account replicate into it, so its namespaces need no `acct<id>_` prefix (confinement by bucket); it must be "
        "in the account and Region of `[recovery] replica`, whose recovery role reads it.",
    )

    _acct = field_validator("feeding_account")(classmethod(lambda cls, v: None if v is None else check_account(v)))
