"""`s3tables_kit.infra.adoptgate` on the kit's own source stack (the recorded synth, tests/golden/seed/source.json)
adopting a bucket that exists: the apply that stopped half-way on `ConflictException`, and the import that silently
changed the bucket's unreferenced file removal and storage class and replaced its policy with a plain create, are each
refused by name. The plans are built from the stack's document in the shape `terraform show -json` writes (values that
refer to other resources are unknown at plan time, as Terraform reports them); tests/test_adoptgate.py gates real
Terraform plans."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra import adoptgate
from s3tables_kit.infra.adoptgate import AdoptionIntent, PolicyDiff, applies_to, gate, policy_diff
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.loader import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SOURCE = json.loads((ROOT / "tests" / "golden" / "seed" / "source.json").read_text())
META = ("lifecycle", "depends_on", "provider", "//", "provisioner")
REFERENCE = re.compile(r"\$\{([\w-]+\.[\w-]+)(\.[\w-]+)?")
BUCKET_TYPE = "awscc_s3tables_table_bucket"
BUCKET = f"{BUCKET_TYPE}.{next(iter(SOURCE['resource'][BUCKET_TYPE]))}"
POLICY = f"aws_s3tables_table_bucket_policy.{next(iter(SOURCE['resource']['aws_s3tables_table_bucket_policy']))}"
ARN = "arn:aws:s3tables:us-east-1:111122223333:bucket/demo-source-tablebucket"
# The lake as it is: its own unreferenced file removal and storage class, and a policy (not in the plan).
EXISTING = {
    "table_bucket_arn": ARN,
    "table_bucket_name": "demo-source-tablebucket",
    "encryption_configuration": {"kms_key_arn": None, "sse_algorithm": "AES256"},  # read back: the unset key is null
    "storage_class_configuration": {"storage_class": "INTELLIGENT_TIERING"},
    "unreferenced_file_removal": {"noncurrent_days": 20, "status": "Enabled", "unreferenced_days": 7},
}


def first_plan(doc: dict[str, Any]) -> dict[str, Any]:
    """The plan of a first apply of `doc`: every resource created; an argument that refers to another resource is
    unknown (`after_unknown`), and the configuration records what it refers to."""
    changes, config = [], []
    for rtype, bodies in doc["resource"].items():
        for name, body in bodies.items():
            after = {k: v for k, v in body.items() if k not in META and "${" not in json.dumps(v)}
            unknown = {k: True for k, v in body.items() if k not in META and "${" in json.dumps(v)}
            change = {"actions": ["create"], "before": None, "after": after, "after_unknown": unknown}
            changes.append({"address": f"{rtype}.{name}", "mode": "managed", "type": rtype, "name": name,
                            "change": change})  # fmt: skip
            refs = [m.group(1) + (m.group(2) or "") for m in REFERENCE.finditer(str(body.get("table_bucket_arn", "")))]
            refs += [m.group(1) for m in REFERENCE.finditer(str(body.get("table_bucket_arn", "")))]
            exprs = {"table_bucket_arn": {"references": refs}} if refs else {}
            config.append({"address": f"{rtype}.{name}", "mode": "managed", "type": rtype, "expressions": exprs})
    return {
        "format_version": "1.2",
        "resource_changes": changes,
        "configuration": {"root_module": {"resources": config}},
    }


def importing(plan: dict[str, Any]) -> dict[str, Any]:
    """The same plan with the source bucket imported (its import block added): Terraform reads the bucket as it is
    and plans the update to the stack's values."""
    out = copy.deepcopy(plan)
    rc = next(r for r in out["resource_changes"] if r["address"] == BUCKET)
    after = {**EXISTING, **rc["change"]["after"]}
    rc["change"] = {"actions": ["update"], "before": EXISTING, "after": after, "after_unknown": {},
                    "importing": {"id": ARN}}  # fmt: skip
    return out


def intent(tmp_path: Path, *changes: str, written: str = "") -> AdoptionIntent:
    """The seed configuration adopting its source bucket, with `adopt_changes` and the `written` keys."""
    text = (ROOT / "examples" / "seed.toml").read_text()
    stated = (f"adopt_changes = {json.dumps(list(changes))}\n" if changes else "") + written
    (tmp_path / "kit.toml").write_text(text.replace("encryption = {", f"adopt = true\n{stated}encryption = {{", 1))
    return AdoptionIntent.of(load_config(tmp_path / "kit.toml"))


def test_creating_an_adopted_bucket_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    """Without an import the apply would create roles, the monitor and a key, then stop on the bucket: the gate
    refuses the whole plan first."""
    report = gate(first_plan(SOURCE), intent(tmp_path))
    assert [(r.address, r.rule) for r in report.refused] == [(BUCKET, "create of an adopted bucket")]
    assert "the stack must import it, not create it" in str(report.refused[0])
    assert gate(first_plan(SOURCE), AdoptionIntent()).passed  # a bucket the configuration does not adopt is created
    # Gated: the first apply of a configuration that adopts; not a later deploy that imports nothing.
    assert applies_to(first_plan(SOURCE), intent(tmp_path))
    assert not applies_to(first_plan(SOURCE), intent(tmp_path), first_apply=False)
    assert not applies_to(first_plan(SOURCE), AdoptionIntent())


def test_an_import_that_would_change_maintenance_storage_class_and_policy_is_refused_by_name(tmp_path: Path) -> None:
    plan = importing(first_plan(SOURCE))
    assert applies_to(plan, AdoptionIntent())
    report = gate(plan, intent(tmp_path))
    assert {(r.address, r.rule, r.attributes) for r in report.refused} == {
        (BUCKET, "overwrite", ("storage_class_configuration",)),
        (BUCKET, "overwrite", ("unreferenced_file_removal",)),
        # the policy names the bucket by a reference (unknown at plan time): resolved through the configuration
        (POLICY, "create over existing", ("bucket_policy",)),
    }
    text = "\n".join(map(str, report.refused))
    assert 'storage_class_configuration.storage_class: "INTELLIGENT_TIERING" -> "STANDARD"' in text
    assert "unreferenced_file_removal.unreferenced_days: 7 -> 3" in text
    assert "unreferenced_file_removal.noncurrent_days: 20 -> 10" in text
    assert "encryption" not in text  # the same encryption (a null and an absent key alike): nothing to refuse
    assert "kit.toml does not state storage_class (write it to change it; leave it out to keep the bucket's)" in text
    # Written in kit.toml, the storage class and the file removal are stated; a policy on a bucket without one too.
    written = (
        'storage_class = "STANDARD"\nunreferenced_file_removal = { unreferenced_days = 3, noncurrent_days = 10 }\n'
    )
    stated = gate(plan, intent(tmp_path, "bucket_policy", written=written))
    assert stated.passed
    assert sorted(n.detail.split(" ")[0] for n in stated.of_kind("stated change")) == [
        "bucket_policy,", "maintenance", "storage_class"]  # fmt: skip
    assert [n.address for n in stated.of_kind("import")] == [BUCKET]
    assert len(stated.of_kind("create")) == sum(len(v) for v in SOURCE["resource"].values()) - 2


def test_a_destroy_is_refused_and_a_merged_policy_is_compared_by_meaning() -> None:
    plan = importing(first_plan(SOURCE))
    alarm = next(r for r in plan["resource_changes"] if r["type"] == "aws_cloudwatch_metric_alarm")
    alarm["change"] = {"actions": ["delete"], "before": alarm["change"]["after"], "after": None}
    alarm["action_reason"] = "delete_because_no_resource_config"
    report = gate(plan, AdoptionIntent())
    destroyed = [r for r in report.refused if r.rule == "destroy"]
    assert [str(r) for r in destroyed] == [
        f"{alarm['address']}: would be destroyed (in the state); delete_because_no_resource_config"
    ]
    # A statement kept with its keys in another order and a one-element list for a string is kept.
    grant = {"Sid": "AthenaReaders", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:role/a"},
             "Action": "s3tables:GetTable", "Resource": f"{ARN}/*"}  # fmt: skip
    same = {"Resource": [f"{ARN}/*"], "Action": ["s3tables:GetTable"], "Effect": "Allow", "Sid": "AthenaReaders",
            "Principal": {"AWS": ["arn:aws:iam::111122223333:role/a"]}}  # fmt: skip
    deny = {"Sid": "DenySourceBucketPolicyChange", "Effect": "Deny", "Principal": "*", "Action": "s3tables:X"}
    old = json.dumps({"Statement": [grant]})
    assert policy_diff(old, json.dumps({"Statement": [same, deny]})) == PolicyDiff(
        ("AthenaReaders",), (), (), ("DenySourceBucketPolicyChange",))  # fmt: skip
    # Restated under its Sid it is rewritten (the configuration says so); gone, it is dropped.
    wider = {**grant, "Action": ["s3tables:GetTable", "s3tables:GetTableData"]}
    assert policy_diff(old, json.dumps({"Statement": [wider]})) == PolicyDiff((), ("AthenaReaders",), (), ())
    unnamed = {k: v for k, v in grant.items() if k != "Sid"}
    assert policy_diff(old, json.dumps({"Statement": [unnamed, deny]})).dropped == ("AthenaReaders",)


def test_the_gate_refuses_what_is_not_a_saved_plan_of_the_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fail closed: `terraform show -json` without the plan file (the state: `{"format_version":"1.0"}`), a JSON
    list, an empty plan and the plan of another configuration's stack are each refused, exit 2, one line."""
    intent(tmp_path)
    saved = {**importing(first_plan(SOURCE)), "planned_values": {"root_module": {"resources": []}}}
    foreign = copy.deepcopy(saved)
    for rc in foreign["resource_changes"]:
        if rc["type"] == BUCKET_TYPE:
            rc["change"]["before"] = rc["change"]["after"] = {"table_bucket_name": "someone-elses-lake"}
    cases = {
        "state.json": ({"format_version": "1.0"}, "not a saved plan (no planned_values, resource_changes)"),
        "list.json": ([], "not a saved plan: `terraform show -json <plan file>` writes a JSON object, this is a list"),
        "empty.json": (
            {"format_version": "1.2", "planned_values": {}, "resource_changes": []},
            "a plan of no resource",
        ),
        "foreign.json": (foreign, "a plan of table bucket(s) someone-elses-lake, none of which the configuration"),
    }
    config = str(tmp_path / "kit.toml")
    for name, (doc, line) in cases.items():
        (tmp_path / name).write_text(json.dumps(doc))
        assert adoptgate.main(["--plan-json", str(tmp_path / name), "--config", config]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and line in err and "Traceback" not in err, (name, err)
    # The saved plan itself is read, and gated.
    (tmp_path / "plan.json").write_text(json.dumps(saved))
    assert adoptgate.main(["--plan-json", str(tmp_path / "plan.json"), "--config", config]) == 2
    assert "refused: 3 change(s)" in capsys.readouterr().err


DEST = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"
OLD_DEST = "arn:aws:s3tables:eu-west-1:111122223333:bucket/team-copy"
TAKEOVER = "aws_s3tables_table_bucket_replication.replication_bucket"


def replication_change(actions: list[str], before: list[str] | None, after: list[str], **extra: Any) -> dict[str, Any]:
    def body(dests: list[str]) -> dict[str, Any]:
        return {"table_bucket_arn": ARN, "role": "arn:aws:iam::111122223333:role/r", "version_token": "t1",
                "rule": [{"destination": [{"destination_table_bucket_arn": d} for d in dests]}]}  # fmt: skip

    change = {"actions": actions, "before": None if before is None else body(before), "after": body(after),
              "after_unknown": {}, **extra}  # fmt: skip
    return {"address": TAKEOVER, "mode": "managed", "type": TAKEOVER.split(".")[0], "change": change}


def test_an_existing_replication_is_taken_over_in_place_and_never_loses_a_destination_unstated(tmp_path: Path) -> None:
    """The bucket replicates already (to the replica the configuration keeps): the first deploy imports the
    configuration and updates it. Kept destinations pass; one dropped is refused unless stated; a create over it and a
    delete (a gap) are refused."""
    existing = f'existing_destinations = ["{DEST}"]\n'

    def plan_of(rc: dict[str, Any]) -> dict[str, Any]:
        return {"format_version": "1.2", "resource_changes": [rc]}

    kept = plan_of(replication_change(["update"], [DEST], [DEST, OLD_DEST], importing={"id": ARN}))
    report = gate(kept, intent(tmp_path, "bucket_policy", written=existing))
    assert report.passed, report.summary()
    assert [n.detail for n in report.of_kind("replication kept")] == [
        f"1 existing destination(s) kept; added {OLD_DEST}; updated in place with the version token of the state"
    ]
    dropped = plan_of(replication_change(["update"], [OLD_DEST, DEST], [DEST], importing={"id": ARN}))
    (refusal,) = gate(dropped, intent(tmp_path, "bucket_policy", written=existing)).refused
    assert (refusal.address, refusal.rule, refusal.attributes) == (TAKEOVER, "overwrite", ("rule",))
    assert f"drops existing destination(s) {OLD_DEST}" in refusal.why
    assert gate(dropped, intent(tmp_path, "bucket_policy", "replication", written=existing)).passed  # stated
    created = plan_of(replication_change(["create"], None, [DEST]))
    (refusal,) = gate(created, intent(tmp_path, "bucket_policy", written=existing)).refused
    assert refusal.rule == "create over existing" and "the stack must import it" in refusal.why
    assert gate(created, intent(tmp_path, "bucket_policy")).passed  # a bucket that replicates nowhere yet
    gap = plan_of(replication_change(["delete", "create"], [DEST], [DEST], importing={"id": ARN}))
    (refusal,) = gate(gap, intent(tmp_path, "bucket_policy", written=existing)).refused
    assert refusal.rule == "replace" and "replicates nothing from the delete until" in refusal.why
    # A provider that read no version token at the import (#46675) would fail the update half-way: refused.
    tokenless = copy.deepcopy(kept)
    tokenless["resource_changes"][0]["change"]["before"]["version_token"] = ""
    (refusal,) = gate(tokenless, intent(tmp_path, "bucket_policy", written=existing)).refused
    assert refusal.attributes == ("version_token",) and "--take-over" in refusal.why
    # The configuration itself keeps each existing destination unless it states the drop.
    with pytest.raises(ConfigError, match=r"source\.existing_destinations\[0\]: .*team-copy receives this bucket"):
        intent(tmp_path, "bucket_policy", written=f'existing_destinations = ["{OLD_DEST}"]\n')
    assert intent(tmp_path, "replication", "bucket_policy", written=f'existing_destinations = ["{OLD_DEST}"]\n')
