"""Check awscc resources against the CloudFormation resource schema of their type, as bundled in `cfn-lint`.

No awscc provider binary can be installed here (so `make validate` cannot check awscc resources), but the awscc
provider is generated from the CloudFormation resource schemas: each attribute is the snake_case of a CloudFormation
property, nested the same way. So every awscc resource the kit synthesizes is mapped back to its CloudFormation
document (names, nesting) and validated against the schema with a JSON-schema validator nobody here wrote (types,
enums, required, lengths, patterns, additionalProperties), plus the schema's readOnlyProperties (must not be set);
the createOnlyProperties that are set are returned (a change to one replaces the resource).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

META_ARGUMENTS = frozenset({"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "//"})


def snake(cfn_name: str) -> str:
    """CloudFormation property name -> awscc attribute name: `KMSKeyArn` -> `kms_key_arn`, `TableBucketARN` ->
    `table_bucket_arn`, `SSEAlgorithm` -> `sse_algorithm`."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", cfn_name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


@cache
def _manager() -> Any:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    return PROVIDER_SCHEMA_MANAGER


@cache
def cfn_type(awscc_type: str, region: str) -> str:
    """`awscc_s3tables_table_bucket` -> `AWS::S3Tables::TableBucket` (from the types cfn-lint knows in the Region)."""
    for t in _manager().get_resource_types(region):
        parts = t.split("::")
        if len(parts) == 3 and parts[0] == "AWS" and f"awscc_{parts[1].lower()}_{snake(parts[2])}" == awscc_type:
            return str(t)
    raise KeyError(f"{awscc_type}: no CloudFormation resource type of that name in cfn-lint's schemas for {region}")


def cfn_schema(cfn_type_name: str, region: str) -> dict[str, Any]:
    return dict(_manager().get_resource_schema(region, cfn_type_name).schema)


@dataclass
class CfnCheck:
    cfn_type: str
    document: dict[str, Any]  # the resource's properties with CloudFormation names
    problems: list[str] = field(default_factory=list)
    create_only_set: list[str] = field(default_factory=list)  # awscc attribute paths


def _resolve(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"unsupported $ref {ref}")
        target: Any = schema
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def _to_cfn(value: Any, node: dict[str, Any], schema: dict[str, Any], path: str, problems: list[str]) -> Any:
    """The awscc value with CloudFormation property names; unknown names are problems (and dropped)."""
    node = _resolve(node, schema)
    if isinstance(value, dict) and ("properties" in node or node.get("type") == "object"):
        props = node.get("properties", {})
        by_snake = {snake(k): k for k in props}
        out = {}
        for key, v in value.items():
            if v is None:
                continue  # Terraform null: not set
            if key not in by_snake:
                problems.append(
                    f"{path}.{key}: no such property (expected one of {sorted(by_snake)}; "
                    "awscc attributes are the snake_case of the CloudFormation property names)"
                )
                continue
            cfn = by_snake[key]
            out[cfn] = _to_cfn(v, props[cfn], schema, f"{path}.{key}", problems)
        return out
    if isinstance(value, list) and "items" in node:
        return [_to_cfn(v, node["items"], schema, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    return value


def _pointer_to_awscc(pointer: str) -> str:
    return ".".join(snake(p) for p in pointer.removeprefix("/properties/").split("/") if p != "*")


def _has(doc: dict[str, Any], pointer: str) -> bool:
    node: Any = doc
    for part in pointer.removeprefix("/properties/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def check_awscc_resource(awscc_type: str, body: dict[str, Any], region: str) -> CfnCheck:
    from jsonschema import Draft7Validator

    tname = cfn_type(awscc_type, region)
    schema = cfn_schema(tname, region)
    problems: list[str] = []
    attrs = {k: v for k, v in body.items() if k not in META_ARGUMENTS}
    doc = _to_cfn(attrs, {"properties": schema["properties"], "type": "object"}, schema, awscc_type, problems)
    validator_schema = {k: v for k, v in schema.items() if k in ("definitions", "properties", "required")}
    validator_schema["type"] = "object"
    validator_schema["additionalProperties"] = schema.get("additionalProperties", False)
    for err in sorted(Draft7Validator(validator_schema).iter_errors(doc), key=lambda e: list(e.absolute_path)):
        where = ".".join(snake(str(p)) if isinstance(p, str) else f"[{p}]" for p in err.absolute_path)
        problems.append(f"{awscc_type}{'.' + where if where else ''}: {err.message} ({tname} schema)")
    for pointer in schema.get("readOnlyProperties", []):
        if _has(doc, pointer):
            problems.append(f"{awscc_type}.{_pointer_to_awscc(pointer)}: read-only in {tname}; must not be set")
    create_only = [_pointer_to_awscc(p) for p in schema.get("createOnlyProperties", []) if _has(doc, p)]
    return CfnCheck(tname, doc, problems, create_only)
