"""Take over an existing replication configuration in one step, without a gap, with the provider the kit pins.

The pinned hashicorp/aws provider's replication resources (`aws_s3tables_table_bucket_replication`,
`aws_s3tables_table_replication`) send on update the version token their *prior state* holds (`Update` reads
`version_token` from the state; the attribute is Computed only, so no configuration can set it) and their `Read` never
sets it: an imported configuration has none, and its update is refused (`A version token is not specified`;
docs/aws-facts.md, `#46675`). Before the adopting stack is planned, this step gives the imported resource the token:

1. each replication configuration the stack imports (its `import {}` blocks of those types) that the state does not
   hold yet is imported alone (`terraform import`: the state only, nothing in the account changes);
2. the state is pulled; the live configuration and its token are read in one `Get*Replication` answer, and the
   resource's `role`, `rule` and `version_token` are set from that one answer (the token covers exactly what the
   state then holds);
3. the state is pushed with its serial + 1 (`terraform state push`, under the state lock): Terraform refuses it when
   the state changed since the pull (another run), so two runs cannot both write.

Then the stack's plan, the adoption gate and the apply of that saved plan, as for any adopting stack
(`s3tables-kit adopt-gate --stack-dir <dir> --config kit.toml --take-over --apply` runs the four): the update is one
`Put*Replication` over the live configuration with its token, so the bucket is never without one. A token made stale
by any change after step 2 fails closed (`ConflictException`: the live configuration stays as it is; run the step
again and review the new plan); of two runs holding the same token only the first `Put` succeeds.
"""

from __future__ import annotations

import copy
import json
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]
# What one `Get*Replication` answers: {"configuration": {"role", "rules"}, "versionToken"}.
ReadLive = Callable[[str, str], Json]
Terraform = Callable[..., str]


@dataclass(frozen=True)
class ReplicationKind:
    """A replication resource type of the provider: the API read that answers its configuration and token."""

    rtype: str
    get: str  # the boto3 s3tables method
    key: str  # its parameter, given the import id (an ARN)


KINDS: dict[str, ReplicationKind] = {
    k.rtype: k
    for k in (
        ReplicationKind("aws_s3tables_table_bucket_replication", "get_table_bucket_replication", "tableBucketARN"),
        ReplicationKind("aws_s3tables_table_replication", "get_table_replication", "tableArn"),
    )
}


@dataclass(frozen=True)
class TakenOver:
    """One configuration given its live token: what the step did to the state."""

    address: str
    import_id: str
    imported: bool  # this run imported it (else the state held it already)
    token_was: str  # "none" (the import's), "stale", "current"
    destinations: tuple[str, ...]  # the live configuration's, which the plan must keep

    def __str__(self) -> str:
        did = "imported, " if self.imported else ""
        token = "already current" if self.token_was == "current" else f"written (was {self.token_was})"
        return f"{self.address}: {did}live version token {token}; live destinations {', '.join(self.destinations)}"


def replication_imports(docs: Iterable[Json]) -> list[tuple[str, ReplicationKind, str]]:
    """(address, kind, import id) of each replication configuration a stack's documents import."""
    out = []
    for doc in docs:
        for block in doc.get("import") or []:
            address, import_id = str(block.get("to", "")), str(block.get("id", ""))
            kind = KINDS.get(address.split(".")[0])
            if kind is not None and import_id:
                out.append((address, kind, import_id))
    return out


def live_attributes(answer: Json) -> Json:
    """A `Get*Replication` answer as the provider's state attributes (`role`, `rule[].destination[]`,
    `version_token`)."""
    conf = answer.get("configuration") or {}
    token = answer.get("versionToken")
    if not conf.get("role") or not token:
        raise ValueError("the live replication configuration was read without its role or version token")
    rules = [{"destination": [{"destination_table_bucket_arn": d["destinationTableBucketARN"]}
                              for d in rule.get("destinations") or []]}
             for rule in conf.get("rules") or []]  # fmt: skip
    return {"role": conf["role"], "rule": rules, "version_token": token}


def _is(res: Json, address: str) -> bool:
    """A state resource of the root module (the stacks are flat) at `type.name`."""
    rtype, _, name = address.partition(".")
    return (
        res.get("mode") == "managed" and not res.get("module") and (res.get("type"), res.get("name")) == (rtype, name)
    )


def _instance(state: Json, address: str) -> Json:
    for res in state.get("resources") or []:
        if _is(res, address):
            instances = res.get("instances") or []
            if len(instances) != 1:
                raise ValueError(f"{address}: {len(instances)} instances in the state, expected one")
            return dict(instances[0])
    raise ValueError(f"{address}: not in the state")


def held(state: Json, address: str) -> bool:
    try:
        _instance(state, address)
    except ValueError:
        return False
    return True


def with_live_token(state: Json, address: str, answer: Json) -> tuple[Json, str]:
    """The state with `address`'s role, rule and version token set from one live answer, its serial + 1 (the state
    itself when it holds that answer already); and what its token was: "none" (imported), "stale", "current"."""
    live = live_attributes(answer)
    before = _instance(state, address)["attributes"]
    token = before.get("version_token")
    was = "none" if not token else ("current" if token == live["version_token"] else "stale")
    if all(before.get(k) == v for k, v in live.items()):
        return state, was
    out = copy.deepcopy(state)
    for res in out["resources"]:
        if _is(res, address):
            res["instances"][0]["attributes"].update(live)
    out["serial"] = int(state["serial"]) + 1
    return out, was


def destinations_of(answer: Json) -> tuple[str, ...]:
    rules = (answer.get("configuration") or {}).get("rules") or []
    return tuple(str(d["destinationTableBucketARN"]) for r in rules for d in r.get("destinations") or [])


def stack_documents(stack_dir: Path) -> list[Json]:
    return [json.loads(p.read_text()) for p in sorted(stack_dir.glob("*.tf.json"))]


def take_over(tf: Terraform, stack_dir: Path, read_live: ReadLive) -> list[TakenOver]:
    """Steps 1-3 of the module's docstring for every replication configuration the stack in `stack_dir` imports
    (`terraform init` done); `tf(*args)` runs Terraform there and returns its output, raising on failure."""
    done = []
    for address, kind, import_id in replication_imports(stack_documents(stack_dir)):
        state = _pull(tf)
        imported = not held(state, address)
        if imported:
            tf("import", "-input=false", "-no-color", address, import_id)
            state = _pull(tf)
        answer = read_live(kind.rtype, import_id)
        new, was = with_live_token(state, address, answer)
        if new is not state:
            _push(tf, new)
        done.append(TakenOver(address, import_id, imported, was, destinations_of(answer)))
    return done


def _pull(tf: Terraform) -> Json:
    text = tf("state", "pull")
    return dict(json.loads(text)) if text.strip() else {"serial": 0, "resources": []}


def _push(tf: Terraform, state: Json) -> None:
    """`terraform state push` without -force: refused when the state's lineage differs or its serial moved on."""
    with tempfile.TemporaryDirectory(prefix="kit-takeover-") as tmp:
        path = Path(tmp) / "takeover.tfstate"
        path.write_text(json.dumps(state, indent=2) + "\n")
        tf("state", "push", str(path))


def live_reader(client_of: Callable[[str], Any]) -> ReadLive:
    """A `ReadLive` over boto3 `s3tables` clients by Region (`client_of(region)`); the Region is the ARN's."""

    def read(rtype: str, import_id: str) -> Json:
        from botocore.exceptions import BotoCoreError, ClientError

        kind = KINDS[rtype]
        try:
            answer = getattr(client_of(import_id.split(":")[3]), kind.get)(**{kind.key: import_id})
        except (BotoCoreError, ClientError) as exc:  # one line, nothing written: the state is pushed after this read
            raise RuntimeError(f"{kind.get} of {import_id}: {exc}") from None
        return {"configuration": answer.get("configuration") or {}, "versionToken": answer.get("versionToken")}

    return read


def terraform_runner(
    terraform: Path, stack_dir: Path, env: Mapping[str, str] | None, log: list[str] | None = None
) -> Terraform:
    """`tf(*args)`: Terraform run in `stack_dir`, its output kept in `log`; RuntimeError (with the output's tail) on
    a non-zero exit."""

    def tf(*args: str) -> str:
        proc = subprocess.run(
            [str(terraform), *args], cwd=stack_dir, env=dict(env) if env is not None else None, capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        if log is not None:
            log.append(f"$ terraform {' '.join(args)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise RuntimeError(f"terraform {' '.join(args)} failed in {stack_dir}:\n{proc.stdout[-2000:]}{proc.stderr}")
        return proc.stdout

    return tf
