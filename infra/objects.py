"""Object-typed attributes must be written whole.

Terraform converts an object-typed attribute (e.g. `aws_s3tables_table.encryption_configuration`,
`maintenance_configuration`) to its object type, and an object type has no optional members: every key must be
present (`null` is a value), else the plan fails with `attribute "kms_key_arn" is required`. The typed bindings make
every member optional and drop the unset ones, so a partial object synthesizes fine and fails only at
`terraform plan`.

The bindings know which attributes are object-typed: cdktf's HCL metadata (`_synthesize_hcl_attributes`) marks them
`type: "struct"` (blocks are `list`), and the struct class's keyword arguments are exactly the object's keys. This
check needs no provider binary, so it covers the attributes of the pinned provider version too.
"""

from __future__ import annotations

import importlib
import inspect
import json
from functools import cache
from pathlib import Path
from typing import Any

from cdktf import App, TerraformResource, TerraformStack


@cache
def struct_keys(module_name: str, class_name: str) -> frozenset[str]:
    """The keys of the object type a binding struct stands for (its keyword-only constructor arguments)."""
    cls = getattr(importlib.import_module(module_name), class_name)
    params = inspect.signature(cls.__init__).parameters.values()
    return frozenset(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _object_paths(meta: dict[str, Any], module_name: str, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """(path, struct class) of every struct-typed (object) attribute in cdktf's HCL metadata of a resource."""
    out: list[tuple[tuple[str, ...], str]] = []
    for key, entry in meta.items():
        if not isinstance(entry, dict) or "type" not in entry:
            continue
        path = (*prefix, key)
        value = entry.get("value")
        if entry["type"] == "struct":
            out.append((path, str(entry["storageClassType"])))
            if isinstance(value, dict):
                out += _object_paths(value, module_name, path)
        elif entry["type"] == "list":
            for el in value if isinstance(value, list) else [value]:
                if isinstance(el, dict):
                    out += _object_paths(el, module_name, (*path, "[]"))
    return out


def _values_at(node: Any, path: tuple[str, ...]) -> list[Any]:
    if not path:
        return [node]
    head, rest = path[0], path[1:]
    if head == "[]":
        items = node if isinstance(node, list) else [node]
        return [v for item in items for v in _values_at(item, rest)]
    if isinstance(node, dict) and head in node:
        return _values_at(node[head], rest)
    return []


def partial_objects(app: App, outdir: Path) -> list[str]:
    """Every object-typed attribute in the synthesized stacks (`outdir/stacks/*/cdk.tf.json`, after `app.synth()`)
    that lacks a key of its object type, as `stack: type.name.path: missing [keys]`."""
    problems = []
    docs: dict[str, Any] = {}
    for construct in app.node.find_all():
        if not isinstance(construct, TerraformResource):
            continue
        stack = TerraformStack.of(construct).node.id
        if stack not in docs:
            docs[stack] = json.loads((outdir / "stacks" / stack / "cdk.tf.json").read_text())
        rtype = construct.terraform_resource_type
        body = docs[stack].get("resource", {}).get(rtype, {}).get(construct.friendly_unique_id)
        if body is None:
            continue
        module_name = type(construct).__module__
        if module_name.startswith("cdktf.") or module_name == "cdktf":
            continue  # generic TerraformResource (awscc): no bindings, checked against the CloudFormation schema
        meta = dict(construct._synthesize_hcl_attributes())  # cdktf's own metadata of the bindings
        for path, struct in _object_paths(meta, module_name, ()):
            want = struct_keys(module_name, struct)
            for value in _values_at(body, path):
                if isinstance(value, dict):
                    missing = sorted(want - set(value))
                    if missing:
                        where = ".".join(p for p in path if p != "[]")
                        problems.append(
                            f"{stack}: {rtype}.{construct.friendly_unique_id}.{where}: object attribute written "
                            f"without {missing} (write every key; null where unset)"
                        )
    return problems
