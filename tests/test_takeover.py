"""`s3tables_kit.infra.takeover` and the adoption gate on the plan that follows it: an existing replication
configuration taken over in one step with the pinned provider (its import reads no version token; the step records the
live one in the state, serial-checked), and the gate passing that plan only when the token is in its prior state.

No Terraform here: the state is in the shape `terraform state pull` writes for the provider's resource, the plans in
the shape `terraform show -json` writes; `python -m harness.e2e.token_probe` (make e2e-all) runs the step, the plan,
the gate and the apply with the real binary against the stand-in."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3tables_kit.infra import adoptgate
from s3tables_kit.infra.adoptgate import AdoptionIntent, gate
from s3tables_kit.infra.takeover import KINDS, live_attributes, live_reader, replication_imports, with_live_token
from tests.ops_fixtures import OpsEnv, moto_endpoint, ops_env  # noqa: F401

SRC = "arn:aws:s3tables:us-east-1:111122223333:bucket/orders-lake"
DR = "arn:aws:s3tables:us-west-2:111122223333:bucket/orders-lake-dr"
NEW = "arn:aws:s3tables:eu-west-1:111122223333:bucket/orders-lake-eu"
TABLE = f"{SRC}/table/0d1c2b3a-4f5e-6d7c-8b9a-0a1b2c3d4e5f"
OWNERS, KIT = "arn:aws:iam::111122223333:role/owners-replication", "arn:aws:iam::111122223333:role/kit-replication"
ADDRESS = "aws_s3tables_table_bucket_replication.replication_bucket_1A2B3C4D"


def rule(*dests: str) -> list[dict[str, Any]]:
    return [{"destination": [{"destination_table_bucket_arn": d} for d in dests]}]


def answer(token: str, role: str = OWNERS, *dests: str) -> dict[str, Any]:
    """What `GetTableBucketReplication` answers."""
    return {"configuration": {"role": role, "rules": [{"destinations": [{"destinationTableBucketARN": d}
                                                                        for d in dests or (DR,)]}]},
            "versionToken": token}  # fmt: skip


def imported_state(token: str | None = None) -> dict[str, Any]:
    """`terraform state pull` right after `terraform import` of the configuration (the provider's Read sets no
    token), beside another resource of the stack."""
    attrs = {"region": "us-east-1", "role": OWNERS, "rule": rule(DR), "table_bucket_arn": SRC, "version_token": token}
    replication = {"mode": "managed", "type": ADDRESS.split(".")[0], "name": ADDRESS.split(".")[1],
                   "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
                   "instances": [{"schema_version": 0, "attributes": attrs, "sensitive_attributes": [],
                                  "identity_schema_version": 0, "identity": {"table_bucket_arn": SRC}}]}  # fmt: skip
    role = {"mode": "managed", "type": "aws_iam_role", "name": "kit", "instances": [{"attributes": {"arn": KIT}}]}
    return {"version": 4, "terraform_version": "1.11.4", "serial": 7, "lineage": "4f1e", "outputs": {},
            "resources": [role, replication], "check_results": None}  # fmt: skip


def test_the_live_token_is_written_with_the_configuration_it_covers_and_the_serial_moves_on() -> None:
    state = imported_state()
    new, was = with_live_token(state, ADDRESS, answer("t-live"))
    attrs = new["resources"][1]["instances"][0]["attributes"]
    assert was == "none" and attrs["version_token"] == "t-live" and new["serial"] == 8
    assert (new["lineage"], new["resources"][0]) == (state["lineage"], state["resources"][0])  # nothing else moves
    assert state["resources"][1]["instances"][0]["attributes"]["version_token"] is None  # the input is left as it was
    # Changed since the import (another destination added outside): the state takes the answer the token covers.
    moved, was = with_live_token(state, ADDRESS, answer("t-2", OWNERS, DR, NEW))
    assert was == "none" and moved["resources"][1]["instances"][0]["attributes"]["rule"] == rule(DR, NEW)
    # A run again: the state holds that answer already, so there is nothing to push; a stale token is replaced.
    assert with_live_token(new, ADDRESS, answer("t-live")) == (new, "current")
    again, was = with_live_token(new, ADDRESS, answer("t-3"))
    assert was == "stale" and again["serial"] == 9


def test_what_cannot_be_shown_is_refused() -> None:
    with pytest.raises(ValueError, match="not in the state"):
        with_live_token(imported_state(), "aws_s3tables_table_bucket_replication.other", answer("t"))
    with pytest.raises(ValueError, match="without its role or version token"):
        live_attributes({"configuration": answer("t")["configuration"], "versionToken": None})
    twice = imported_state()
    twice["resources"][1]["instances"] *= 2
    with pytest.raises(ValueError, match="2 instances"):
        with_live_token(twice, ADDRESS, answer("t"))


def test_each_level_is_read_with_its_token_by_its_own_call(ops_env: OpsEnv) -> None:  # noqa: F811
    """On the stand-in: the bucket-level and a table-level configuration, each read as the state takes it."""
    clients = ops_env.clients()
    s3t = clients.client("s3tables", "us-east-1")
    src, dst = (str(s3t.create_table_bucket(name=n)["arn"]) for n in ("orders-lake", "orders-lake-dr"))
    s3t.create_namespace(tableBucketARN=src, namespace=["orders"])
    table = str(s3t.create_table(tableBucketARN=src, namespace="orders", name="daily", format="ICEBERG")["tableARN"])
    conf = {"role": OWNERS, "rules": [{"destinations": [{"destinationTableBucketARN": dst}]}]}
    bucket_token = s3t.put_table_bucket_replication(tableBucketARN=src, configuration=conf)["versionToken"]
    table_token = s3t.put_table_replication(tableArn=table, configuration=conf)["versionToken"]
    read = live_reader(lambda region: clients.client("s3tables", region))
    for rtype, arn, token in ((ADDRESS.split(".")[0], src, bucket_token),
                              ("aws_s3tables_table_replication", table, table_token)):  # fmt: skip
        assert live_attributes(read(rtype, arn)) == {"role": OWNERS, "rule": rule(dst), "version_token": token}
    doc = {"import": [{"to": ADDRESS, "id": src}, {"to": "awscc_s3tables_table_bucket.b", "id": src},
                      {"to": "aws_s3tables_table_replication.t", "id": table}]}  # fmt: skip
    found = [(a, k.rtype, i) for a, k, i in replication_imports([doc])]
    assert found == [(ADDRESS, ADDRESS.split(".")[0], src), ("aws_s3tables_table_replication.t",
                                                             "aws_s3tables_table_replication", table)]  # fmt: skip
    assert set(KINDS) == set(adoptgate.REPLICATION_TYPES)
    s3t.delete_table_replication(tableArn=table, versionToken=table_token)  # gone since the import: one line
    with pytest.raises(RuntimeError, match=r"get_table_replication of .*NotFoundException"):
        read("aws_s3tables_table_replication", table)


def taken_over_plan(before_dests: tuple[str, ...], after_dests: tuple[str, ...], token: str | None) -> dict[str, Any]:
    """The plan after the take-over: the configuration is in the state (no `importing`), its prior state holds what
    the step wrote; the update changes the role to the kit's (and the destinations); the new token is unknown."""
    before = {"table_bucket_arn": SRC, "role": OWNERS, "rule": rule(*before_dests), "version_token": token}
    after = {"table_bucket_arn": SRC, "role": KIT, "rule": rule(*after_dests)}
    change = {"actions": ["update"], "before": before, "after": after, "after_unknown": {"version_token": True}}
    rc = {"address": ADDRESS, "mode": "managed", "type": ADDRESS.split(".")[0], "change": change}
    return {"format_version": "1.2", "resource_changes": [rc]}


def intent(*stated: str) -> AdoptionIntent:
    return AdoptionIntent(frozenset({SRC}), frozenset({"orders-lake"}), {SRC: frozenset(stated)},
                          replicating={SRC: frozenset({DR})})  # fmt: skip


def test_the_gate_passes_the_taken_over_update_only_with_its_token_and_every_existing_destination() -> None:
    report = gate(taken_over_plan((DR,), (DR, NEW), "t-live"), intent())
    assert report.passed, report.summary()
    assert [n.detail for n in report.of_kind("replication kept")] == [
        f"1 existing destination(s) kept; added {NEW}; updated in place with the version token of the state"
    ]
    (refusal,) = gate(taken_over_plan((DR,), (DR,), None), intent()).refused  # the import's, not taken over
    assert refusal.attributes == ("version_token",) and "in the state without its version token" in refusal.why
    assert "--take-over" in refusal.why
    (refusal,) = gate(taken_over_plan((DR,), (NEW,), "t-live"), intent()).refused
    assert refusal.rule == "overwrite" and f"drops existing destination(s) {DR}" in refusal.why
    assert gate(taken_over_plan((DR,), (NEW,), "t-live"), intent("replication")).passed  # the drop stated
    # An update of a configuration no adoption names still needs the token its state sends.
    other = copy.deepcopy(taken_over_plan((DR,), (DR, NEW), ""))
    (refusal,) = gate(other, AdoptionIntent()).refused
    assert refusal.attributes == ("version_token",)
    assert gate(taken_over_plan((DR,), (DR, NEW), "t"), AdoptionIntent()).of_kind("update")
    # A table-level configuration of the bucket, taken over the same way, keeps its destinations the same way.
    table = copy.deepcopy(taken_over_plan((DR,), (NEW,), "t-live"))
    rc = table["resource_changes"][0]
    rc["address"], rc["type"] = "aws_s3tables_table_replication.t", "aws_s3tables_table_replication"
    for body in (rc["change"]["before"], rc["change"]["after"]):
        body["table_arn"] = TABLE
        del body["table_bucket_arn"]
    (refusal,) = gate(table, intent()).refused
    assert refusal.address == rc["address"] and f"drops existing destination(s) {DR}" in refusal.why


def test_take_over_needs_a_stack_to_act_on(capsys: pytest.CaptureFixture[str]) -> None:
    assert adoptgate.main(["--plan-json", "plan.json", "--take-over"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--take-over need --stack-dir" in err
