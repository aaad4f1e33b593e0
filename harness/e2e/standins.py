"""What `make e2e` changes in a synthesized stack before the real `terraform` applies it to the local AWS stand-in.
Reviewed in one place: every change is a rule below, and every rule says why.

The production synth is never changed: `localize()` takes a copy of a synthesized stack document and returns the
copy Terraform applies, plus the list of what it changed (printed in the result table and written to the JSON).

1. Provider and backend endpoints (only for this target): every `aws`/`awscc` provider block gets the emulator's
   URL for every service the stacks use, the access key of the stack's account (moto serves a request as the account
   that holds its key) and the skip flags a non-AWS endpoint needs. An `s3` backend, and the `terraform_remote_state`
   data sources that read it, point at the emulator's S3 the same way.
2. Provider versions: where the local mirror lacks the pinned version (aws 6.25.0; the machine image has 5.100.0,
   `make provider` builds 6.47.1), the copy requires the local one, as `make validate` does. With the 6.x build only
   the awscc rule of 3 applies (no awscc binary can be had here: its Go module is not served); with awscc too, the
   stacks are applied unmodified.
3. Resources the local provider does not have (STANDINS):
   - `awscc_s3tables_table_bucket` (no awscc binary here) -> `aws_s3tables_table_bucket` of the aws provider, which
     creates the same bucket through the same CreateTableBucket call, with its encryption and unreferenced-file
     removal (and, with a provider whose table bucket takes `tags`, as 6.x's does, its tags); the settings the aws
     resource cannot express (storage class; with 5.x, AWS resource tags) are applied by an API stand-in
     (`PutTableBucketStorageClass`, `TagResource`).
   - `aws_s3tables_table_replication` / `aws_s3tables_table_bucket_replication` (aws >= 6.25 only; only with the
     image's 5.100.0, the fallback when `make provider` has not been run) -> an API stand-in
     that makes the call the resource makes (`PutTableReplication` / `PutTableBucketReplication`) with the
     synthesized arguments, in Terraform's graph (after the resources it references).
   An API stand-in is a `terraform_data` whose `input` is the call's arguments (so a second plan is empty when they
   did not change) and whose `local-exec` provisioner runs `python -m harness.e2e.apicall` once, at create.
4. Arguments the local provider does not know on a resource it has (e.g. `aws_s3tables_table.metadata`, aws >= 6.2)
   are left out and listed, as `make validate` lists them.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from s3tables_kit.infra.validate import Gap, prepare_stack, provider_statuses

Json = dict[str, Any]

# Services the kit's stacks call, by the aws provider's `endpoints` argument names.
AWS_SERVICES = (
    "cloudwatch",
    "emrserverless",
    "iam",
    "kms",
    "lambda",
    "logs",
    "organizations",
    "s3",
    "s3control",  # hashicorp/aws 6.x reads and writes a general purpose bucket's tags through S3 Control
    "s3tables",
    "scheduler",
    "sns",
    "sts",
)
STANDIN_TYPE = "terraform_data"


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str


@dataclass(frozen=True)
class Target:
    """Where and as whom the localized stacks apply."""

    endpoint: str
    credentials: Mapping[str, Credentials]  # account id -> its access key on the emulator
    python: str  # the interpreter that runs harness.e2e.apicall
    repo: str  # the repository root (PYTHONPATH of the API stand-ins)


@dataclass(frozen=True)
class Change:
    """One line of the result table: how a synthesized resource (or block) was applied."""

    address: str  # e.g. `awscc_s3tables_table_bucket.table-bucket_515E36E8`, `provider.aws`
    how: str  # "native" | "mapped" | "api stand-in" | "not applied" | "endpoint"
    detail: str


@dataclass
class Localized:
    document: Json
    changes: list[Change] = field(default_factory=list)

    @property
    def standins(self) -> list[Change]:
        return [c for c in self.changes if c.how in ("mapped", "api stand-in", "not applied")]


# ---------------------------------------------------------------- rule 1: endpoints ----


def _account_of(provider_block: Json, target: Target) -> str:
    allowed = provider_block.get("allowed_account_ids") or []
    if allowed:
        return str(allowed[0])
    if len(target.credentials) == 1:
        return next(iter(target.credentials))
    raise ValueError(f"provider block {provider_block} names no account (allowed_account_ids) in a multi-account run")


def _endpoint_settings(target: Target, account: str) -> Json:
    creds = target.credentials[account]
    return {
        "access_key": creds.access_key_id,
        "secret_key": creds.secret_access_key,
        "skip_credentials_validation": True,
        "skip_metadata_api_check": True,
        "skip_region_validation": True,
        "s3_use_path_style": True,
        "endpoints": [{svc: target.endpoint for svc in AWS_SERVICES}],
    }


def _localize_providers(doc: Json, target: Target, changes: list[Change]) -> None:
    for name, blocks in doc.get("provider", {}).items():
        for block in blocks if isinstance(blocks, list) else [blocks]:
            alias = f"{name}.{block['alias']}" if "alias" in block else name
            if name == "aws":
                account = _account_of(block, target)
                block.update(_endpoint_settings(target, account))
                changes.append(
                    Change(f"provider.{alias}", "endpoint", f"emulator {target.endpoint}, account {account}")
                )
            else:
                changes.append(Change(f"provider.{alias}", "endpoint", "left as synthesized"))


def _s3_backend_settings(target: Target, config: Json) -> Json:
    account = _state_account(config, target)
    creds = target.credentials[account]
    out = {k: v for k, v in config.items() if k not in ("role_arn", "assume_role", "profile")}
    out.update(
        access_key=creds.access_key_id,
        secret_key=creds.secret_access_key,
        skip_credentials_validation=True,
        skip_metadata_api_check=True,
        skip_region_validation=True,
        skip_requesting_account_id=True,
        use_path_style=True,
        endpoints={"s3": target.endpoint, "sts": target.endpoint, "iam": target.endpoint},
    )
    return out


def _state_account(config: Json, target: Target) -> str:
    """The account that owns the state bucket: the 12 digits in its name, as the kit names it, else the only one."""
    m = re.search(r"(\d{12})", str(config.get("bucket", "")))
    if m and m.group(1) in target.credentials:
        return m.group(1)
    if len(target.credentials) == 1:
        return next(iter(target.credentials))
    raise ValueError(f"cannot tell which account owns the state bucket {config.get('bucket')!r}")


def _localize_backend(doc: Json, target: Target, changes: list[Change]) -> None:
    backend = doc.get("terraform", {}).get("backend", {})
    if "s3" in backend:
        backend["s3"] = _s3_backend_settings(target, backend["s3"])
        changes.append(Change("terraform.backend.s3", "endpoint", f"state bucket {backend['s3'].get('bucket')}"))
    for name, ds in doc.get("data", {}).get("terraform_remote_state", {}).items():
        if ds.get("backend") == "s3":
            ds["config"] = _s3_backend_settings(target, ds["config"])
            changes.append(Change(f"data.terraform_remote_state.{name}", "endpoint", "reads state from the emulator"))


# ---------------------------------------------------------------- rule 3: stand-ins ----


def _api_standin(target: Target, calls: list[Json], source: Json) -> Json:
    """A terraform_data that makes `calls` (each {"service", "region", "account", "operation", "arguments"}) once."""
    body: Json = {
        "input": calls,
        "provisioner": [
            {
                "local-exec": {
                    "command": f"{target.python} -m harness.e2e.apicall",
                    "environment": {
                        "KIT_E2E_CALLS": "${jsonencode(self.input)}",
                        "KIT_E2E_ENDPOINT": target.endpoint,
                        "KIT_E2E_CREDENTIALS": json.dumps(
                            {a: [c.access_key_id, c.secret_access_key] for a, c in sorted(target.credentials.items())}
                        ),
                        "PYTHONPATH": target.repo,
                    },
                }
            }
        ],
    }
    for meta in ("depends_on", "lifecycle"):
        if meta in source:
            body[meta] = copy.deepcopy(source[meta])
    return body


def _destinations(rule: Json) -> list[Json]:
    return [{"destinationTableBucketARN": d["destination_table_bucket_arn"]} for d in rule.get("destination", [])]


def _replication_configuration(body: Json) -> Json:
    rules = body.get("rule", [])
    return {"role": body["role"], "rules": [{"destinations": _destinations(r)} for r in rules]}


def _provider_block(doc: Json, body: Json) -> Json:
    ref = body.get("provider", "aws")
    name, _, alias = str(ref).partition(".")
    blocks = doc.get("provider", {}).get(name, [])
    for block in blocks if isinstance(blocks, list) else [blocks]:
        if block.get("alias", "") == alias:
            return dict(block)
    raise ValueError(f"no provider block {ref!r}")


def _where(doc: Json, body: Json, target: Target) -> tuple[str, str]:
    block = _provider_block(doc, body)
    return str(block["region"]), _account_of(block, target)


ApiStandin = Callable[[Json, str, Json, Target], tuple[Json, str]]


def _replication(operation: str, target_key: str, target_arg: str) -> ApiStandin:
    """The API stand-in of a replication resource: its Put*Replication call with the synthesized arguments."""
    label = "".join(w.capitalize() for w in operation.split("_"))

    def make(doc: Json, name: str, body: Json, target: Target) -> tuple[Json, str]:
        region, account = _where(doc, body, target)
        arguments = {target_key: body[target_arg], "configuration": _replication_configuration(body)}
        call = _s3tables_call(region, account, operation, arguments)
        return _api_standin(target, [call], body), f"{label} with the synthesized role and destinations"

    return make


# Resource type -> the API stand-in that makes its call (rule 3), for types the local aws provider lacks.
API_STANDINS: dict[str, ApiStandin] = {
    "aws_s3tables_table_replication": _replication("put_table_replication", "tableArn", "table_arn"),
    "aws_s3tables_table_bucket_replication": _replication(
        "put_table_bucket_replication", "tableBucketARN", "table_bucket_arn"
    ),
}

AWSCC_BUCKET = "awscc_s3tables_table_bucket"
AWS_BUCKET = "aws_s3tables_table_bucket"


def _awscc_bucket_to_aws(
    doc: Json, name: str, body: Json, target: Target, *, bucket_tags: bool = False
) -> tuple[Json, Json | None, list[str]]:
    """The aws provider's table bucket for an awscc one, and the API stand-in for the settings it cannot express.
    `bucket_tags`: the local aws provider's table bucket takes `tags` (6.x); its tags then go there (the provider
    reads a bucket's tags back, so tags applied beside it would show as a change in every plan)."""
    enc = body.get("encryption_configuration") or {"sse_algorithm": "AES256"}
    aws_body: Json = {
        "name": body["table_bucket_name"],
        "encryption_configuration": {"sse_algorithm": enc["sse_algorithm"], "kms_key_arn": enc.get("kms_key_arn")},
    }
    ufr = body.get("unreferenced_file_removal")
    if ufr:  # the same PutTableBucketMaintenanceConfiguration call, through the aws resource's own argument
        aws_body["maintenance_configuration"] = {
            "iceberg_unreferenced_file_removal": {
                "status": str(ufr.get("status", "Enabled")).lower(),
                "settings": {"non_current_days": ufr["noncurrent_days"], "unreferenced_days": ufr["unreferenced_days"]},
            }
        }
    for meta in ("depends_on", "lifecycle", "//"):
        if meta in body:
            aws_body[meta] = copy.deepcopy(body[meta])
    arn = f"${{{AWS_BUCKET}.{name}.arn}}"
    # The awscc block has no region/account of its own: the stack's default aws provider is in the same account
    # and Region (one stack per account and Region).
    region, account = _where(doc, {"provider": "aws"}, target)
    calls: list[Json] = []
    applied: list[str] = []
    storage = (body.get("storage_class_configuration") or {}).get("storage_class")
    if storage:
        calls.append(_s3tables_call(region, account, "put_table_bucket_storage_class", {
            "tableBucketARN": arn, "storageClassConfiguration": {"storageClass": storage},
        }))  # fmt: skip
        applied.append(f"storage class {storage}")
    tags = {t["key"]: t["value"] for t in body.get("tags") or []}
    if tags and bucket_tags:
        aws_body["tags"] = tags
    elif tags:
        calls.append(_s3tables_call(region, account, "tag_resource", {"resourceArn": arn, "tags": tags}))
        applied.append(f"tags {sorted(tags)}")
    known = {"table_bucket_name", "encryption_configuration", "storage_class_configuration", "tags"}
    known |= {"unreferenced_file_removal", "provider", "depends_on", "lifecycle", "//"}
    unknown = sorted(set(body) - known)
    if unknown:
        raise ValueError(
            f"{AWSCC_BUCKET}.{name}: no stand-in for argument(s) {unknown}: add one to harness/e2e/standins.py"
        )
    standin = _api_standin(target, calls, {"lifecycle": body.get("lifecycle", {})}) if calls else None
    if standin is not None:
        standin["depends_on"] = [f"{AWS_BUCKET}.{name}"]
    return aws_body, standin, applied


def _s3tables_call(region: str, account: str, operation: str, arguments: Json) -> Json:
    return {"service": "s3tables", "region": region, "account": account, "operation": operation, "arguments": arguments}


def _rewrite(node: Any, pattern: re.Pattern[str], repl: str) -> Any:
    if isinstance(node, dict):
        return {k: _rewrite(v, pattern, repl) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite(v, pattern, repl) for v in node]
    if isinstance(node, str):
        return pattern.sub(repl, node)
    return node


def _takes_tags(schemas: Json, rtype: str) -> bool:
    """Whether the local aws provider's `rtype` has a `tags` argument (from `terraform providers schema -json`)."""
    aws = schemas.get("provider_schemas", {}).get("registry.terraform.io/hashicorp/aws", {})
    block = aws.get("resource_schemas", {}).get(rtype, {}).get("block", {})
    return "tags" in block.get("attributes", {})


def _map_awscc_buckets(doc: Json, target: Target, changes: list[Change], *, bucket_tags: bool = False) -> Json:
    buckets = doc.get("resource", {}).pop(AWSCC_BUCKET, {})
    for name, body in sorted(buckets.items()):
        aws_body, standin, applied = _awscc_bucket_to_aws(doc, name, body, target, bucket_tags=bucket_tags)
        doc["resource"].setdefault(AWS_BUCKET, {})[name] = aws_body
        changes.append(
            Change(
                f"{AWSCC_BUCKET}.{name}",
                "mapped",
                f"{AWS_BUCKET} (CreateTableBucket with the same name and encryption"
                + (", and its tags)" if bucket_tags and body.get("tags") else ")"),
            )
        )
        if standin is not None:
            doc["resource"].setdefault(STANDIN_TYPE, {})[f"kit_e2e__{name}__settings"] = standin
            changes.append(Change(f"{AWSCC_BUCKET}.{name}", "api stand-in", ", ".join(applied)))
        ref = re.compile(rf"(?<![\w.-]){re.escape(AWSCC_BUCKET)}\.{re.escape(name)}\.(\w+)")
        for attr in sorted({m.group(1) for m in ref.finditer(json.dumps(doc))}):
            if attr != "table_bucket_arn":
                raise ValueError(
                    f"{AWSCC_BUCKET}.{name}.{attr} is referenced: no mapping for it in harness/e2e/standins.py"
                )
        doc = _rewrite(doc, ref, f"{AWS_BUCKET}.{name}.arn")
        depends = re.compile(rf"^{re.escape(AWSCC_BUCKET)}\.{re.escape(name)}$")
        doc = _rewrite(doc, depends, f"{AWS_BUCKET}.{name}")
    if not doc["resource"].get(AWSCC_BUCKET, True):
        doc["resource"].pop(AWSCC_BUCKET, None)
    return doc


def _map_api_standins(doc: Json, target: Target, changes: list[Change], local_types: set[str]) -> Json:
    for rtype, make in sorted(API_STANDINS.items()):
        if rtype in local_types:
            continue  # the local provider has it: applied natively
        for name, body in sorted(doc.get("resource", {}).pop(rtype, {}).items()):
            standin, what = make(doc, name, body, target)
            new = f"kit_e2e__{rtype}__{name}"
            doc["resource"].setdefault(STANDIN_TYPE, {})[new] = standin
            changes.append(Change(f"{rtype}.{name}", "api stand-in", what))
            doc = _rewrite(doc, re.compile(rf"^{re.escape(rtype)}\.{re.escape(name)}$"), f"{STANDIN_TYPE}.{new}")
    return doc


# ---------------------------------------------------------------- the whole copy ----


def localize(doc: Json, target: Target, local: dict[str, list[str]], schemas: Json, local_types: set[str]) -> Localized:
    """The copy of a synthesized stack that `make e2e` applies, and every change made to it.

    `local`: provider versions in the mirror; `schemas`: `terraform providers schema -json` of the local providers
    that do not satisfy the stacks' pins (as `make validate` computes them); `local_types`: resource types of the
    local aws provider."""
    out = copy.deepcopy(doc)
    changes: list[Change] = []
    statuses = provider_statuses(out, local)
    awscc = next((s for s in statuses.values() if s.address.endswith("/awscc")), None)
    if awscc is not None and awscc.local_version is None:
        out = _map_awscc_buckets(out, target, changes, bucket_tags=_takes_tags(schemas, AWS_BUCKET))
        out.get("terraform", {}).get("required_providers", {}).pop(awscc.name, None)
        out.get("provider", {}).pop(awscc.name, None)
        changes.append(
            Change(
                f"provider.{awscc.name}", "not applied", "no awscc binary in the mirror: its only resource is mapped"
            )
        )
    out = _map_api_standins(out, target, changes, local_types)
    prepared = prepare_stack(out, schemas, local, check_backend=False)
    for gap in prepared.gaps:
        changes.append(_gap_change(gap))
    out = prepared.document
    _localize_providers(out, target, changes)
    _localize_backend(out, target, changes)
    return Localized(out, changes)


def _gap_change(gap: Gap) -> Change:
    return Change(gap.item, "not applied", f"{gap.what}: {gap.reason}")


def native_rows(doc: Json, localized: Localized) -> list[Change]:
    """Resources of the synthesized stack that the real provider applies as they are."""
    touched = {c.address for c in localized.changes}
    rows = []
    for rtype, instances in sorted(doc.get("resource", {}).items()):
        for name in sorted(instances):
            if f"{rtype}.{name}" not in touched:
                rows.append(Change(f"{rtype}.{name}", "native", ""))
    return rows
