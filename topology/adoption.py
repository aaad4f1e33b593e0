"""Adopting a lake the kit did not create: the keys that mark a source bucket (and its namespaces) as existing, the
adopter's bucket policy file read beside `kit.toml`, and the rules between them.

An adopted bucket is imported by the source stack, never created; its namespaces are imported too (unless one says
`adopt = false`: the kit creates it). Its settings are the bucket's own unless `kit.toml` states them: `states`
tells which keys were written, so the stack sets only those (docs/decisions/0033-adopting-an-existing-lake.md).
The adopter's statements are linted and merged with the kit's by `s3tables_kit.policies.adopted`; this module only reads
them, and `s3tables_kit.topology.checks` holds the rules between the keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from s3tables_kit.topology.issues import Issue
from s3tables_kit.topology.schema import Namespace

POLICY_KEY = "bucket_policy"
STATEMENTS_KEY = "adopted_statements"


class AdoptableSite(BaseModel):
    """The keys of a source that adopt an existing bucket (mixed into `s3tables_kit.topology.model.Source`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    adopt: bool = Field(
        default=False,
        description="Whether the bucket already exists: the source stack imports it and its namespaces (never "
        "creates, replaces or destroys them) and sets a storage class or unreferenced-file removal only where "
        "kit.toml states one.",
    )
    bucket_policy: str | None = Field(
        default=None,
        description="With adopt = true: the path, relative to kit.toml, of a JSON file holding the bucket's policy "
        "as it is today (`s3tables-kit discover` writes `bucket-policy-<bucket>.json`), whose statements are kept "
        "and deployed beside the kit's once linted (each needs a Sid).",
    )
    existing_destinations: tuple[str, ...] = Field(
        default=(),
        description="With adopt = true: the destination bucket ARNs of the bucket's existing bucket-level replication "
        "configuration (`s3tables-kit discover` writes them), which the first deploy imports and updates in place "
        "(replication never stops), each kept as a destination (a `[[replicas]]` entry with adopt = true) unless "
        'adopt_changes names "replication".',
    )
    # JSON text, one per statement, so that a source stays hashable like every frozen section.
    adopted_statements: tuple[str, ...] = Field(
        default=(),
        exclude=True,
        description="The statements of `bucket_policy` as JSON text, read by the loader (never written in kit.toml).",
    )

    def adopted_statement_documents(self) -> list[dict[str, object]]:
        """The adopted statements, parsed (a fresh copy each call)."""
        return [json.loads(s) for s in self.adopted_statements]


class AdoptableReplica(BaseModel):
    """The keys of a replica that adopt an existing bucket, the destination of a replication taken over (mixed into
    `s3tables_kit.topology.model.Replica`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    adopt: bool = Field(
        default=False,
        description="Whether the replica bucket already exists (the destination of an existing replication): its "
        "stack imports it, never creates, replaces or destroys it, and gives it the kit's replica protections.",
    )
    adopt_changes: tuple[Literal["bucket_policy", "encryption"], ...] = Field(
        default=(),
        description='With adopt = true: "bucket_policy" (the kit\'s replica policy put on the bucket, replacing '
        'any it has) and "encryption" (a different encryption than it has), changes the adoption gate refuses '
        "otherwise.",
    )


def states(src: AdoptableSite, key: str) -> bool:
    """Whether kit.toml states `key` of the source (an adopted bucket keeps the value it has otherwise)."""
    return not src.adopt or key in src.model_fields_set


def namespace_adopted(src: AdoptableSite, ns: Namespace) -> bool:
    """An adopted bucket's namespaces are imported unless one says `adopt = false` (the kit creates that one)."""
    return src.adopt and ns.adopt is not False


def import_id(*parts: str) -> str:
    """The provider's import id of an S3 Tables resource: `<bucket ARN>[;<namespace>[;<table>]]`."""
    return ";".join(parts)


def read_bucket_policies(data: dict[str, object], base_dir: Path) -> tuple[dict[str, object], list[Issue]]:
    """`data` with each source's `bucket_policy` file read (relative to `base_dir`, the directory of kit.toml) into
    its `adopted_statements`, and the problems of those files, each naming the key as written."""
    out = dict(data)
    issues: list[Issue] = []
    if isinstance(data.get("source"), dict):
        src, found = _read_one(data["source"], base_dir, "source")  # type: ignore[arg-type]
        out["source"], issues = src, found
    sources = data.get("sources")
    if isinstance(sources, list):
        read = []
        for i, entry in enumerate(sources):
            if isinstance(entry, dict):
                entry, found = _read_one(entry, base_dir, f"sources[{i}]")
                issues += found
            read.append(entry)
        out["sources"] = read
    return out, issues


def _read_one(src: dict[str, object], base_dir: Path, where: str) -> tuple[dict[str, object], list[Issue]]:
    if STATEMENTS_KEY in src:
        return src, [Issue(f"{where}.{STATEMENTS_KEY}", "unknown key (the loader reads it from bucket_policy)")]
    written = src.get(POLICY_KEY)
    if not isinstance(written, str):
        return src, []  # absent, or the model names what is wrong with it
    path = Path(written) if Path(written).is_absolute() else base_dir / written
    field = f"{where}.{POLICY_KEY}"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return src, [Issue(field, f"policy file {written!r} not found (relative to the directory of kit.toml)")]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return src, [Issue(field, f"policy file {written!r} is not a readable JSON document: {exc}")]
    statements = document.get("Statement") if isinstance(document, dict) else None
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list) or not statements or not all(isinstance(s, dict) for s in statements):
        return src, [Issue(field, f"policy file {written!r} must be a policy document with a Statement list")]
    return {**src, STATEMENTS_KEY: [json.dumps(s) for s in statements]}, []
