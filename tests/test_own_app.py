"""examples/own-app: a platform team's own CDKTF app composes a protected replica set from the kit's public API
(`s3tables_kit.infra.library`) beside a stack of its own. Run as cdktf runs it, from a copy outside the repository,
it synthesizes; every policy document of every stack passes the KIT rules the kit's own stacks pass; and every stack
passes `terraform validate` with the provider binaries of the local mirror. The public API is what
docs/provisioning.md lists, each name with its docstring."""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra.nag.aspect import POLICY_ATTRIBUTES, SCP_TYPE
from s3tables_kit.policies.lint import lint_document
from tests.synth_fixtures import terraform_toolchain

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "own-app"
LIBRARY = "s3tables_kit.infra.library"
KIT_STACKS = {"source", "replica-analytics-replica", "recovery", "organization"}
TEAM_STACK = "analytics-team"
Stacks = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def own_app(tmp_path_factory: pytest.TempPathFactory) -> Stacks:
    """{stack id: cdk.tf.json} of `python main.py` (cdktf.json's app command) run in a copy of the example."""
    work = tmp_path_factory.mktemp("own-app")
    for name in ("main.py", "cdktf.json"):
        shutil.copy(APP / name, work / name)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    proc = subprocess.run(
        [sys.executable, "main.py"], cwd=work, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stacks = sorted((work / "cdktf.out" / "stacks").iterdir())
    return {d.name: json.loads((d / "cdk.tf.json").read_text()) for d in stacks}


def test_the_example_uses_the_kit_through_its_public_api_only() -> None:
    import s3tables_kit.infra.library as library

    tree = ast.parse((APP / "main.py").read_text(encoding="utf-8"))
    kit_imports = [
        (n.module, [a.name for a in n.names])
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] in {"s3tables_kit", "infra", "jobs"}
    ]
    plain = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [m for m, _ in kit_imports] == [LIBRARY] and not any(p.startswith("s3tables_kit") for p in plain)
    assert set(kit_imports[0][1]) <= set(library.__all__)


def test_every_public_name_has_a_docstring_and_is_listed_in_the_docs() -> None:
    import s3tables_kit.infra.library as library

    section = (
        (ROOT / "docs" / "provisioning.md")
        .read_text(encoding="utf-8")
        .split("## Use the constructs in your own CDKTF app", 1)[1]
    )
    section = section.split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)`", section, re.M))
    assert listed == set(library.__all__), "docs/provisioning.md lists exactly the public API"
    undocumented = [n for n in library.__all__ if not (inspect.getdoc(getattr(library, n)) or "").strip()]
    assert undocumented == []
    for name in library.__all__:  # every parameter of a public construct or stack is described in its docstring
        obj = getattr(library, name)
        if inspect.isclass(obj) and "__init__" in vars(obj) and name.endswith(("Stack", "Policy", "Guardrail", "Scp")):
            params = [p for p in inspect.signature(obj.__init__).parameters if p not in ("self", "scope", "id")]
            doc = inspect.getdoc(obj) or ""
            assert [p for p in params if f"`{p}`" not in doc] == [], name


@pytest.mark.synth
def test_the_kit_adds_its_stacks_beside_the_teams_and_leaves_the_teams_alone(own_app: Stacks) -> None:
    assert set(own_app) == KIT_STACKS | {TEAM_STACK}
    team = own_app[TEAM_STACK]
    assert team["terraform"]["backend"] == {"local": {"path": f"../../../terraform.{TEAM_STACK}.tfstate"}}
    assert set(team["resource"]) == {"aws_sns_topic", "aws_ssm_parameter"}
    assert "lifecycle" not in json.dumps(team["resource"]), "the kit's prevent_destroy is for the kit's stacks"
    # The team reads the replica bucket's ARN from the kit's replica stack (a cross-stack reference).
    (param,) = team["resource"]["aws_ssm_parameter"].values()
    assert "cross-stack-reference-input-replica-analytics-replica" in param["value"]
    replica = own_app["replica-analytics-replica"]
    (bucket,) = replica["resource"]["awscc_s3tables_table_bucket"].values()
    assert bucket["lifecycle"]["prevent_destroy"] is True and bucket["table_bucket_name"] == "analytics-replica"
    assert set(replica["resource"]) >= {"aws_s3tables_table_bucket_policy", "aws_iam_policy", "aws_kms_key"}
    scps = own_app["organization"]["resource"]["aws_organizations_policy"].values()
    assert sorted(p["name"] for p in scps) == [
        "analytics-protect-s3tables-pipeline",
        "analytics-protect-s3tables-replica-guards",
        "analytics-protect-s3tables-replicas",
        "analytics-protect-s3tables-replication-roles",
    ]
    assert own_app["source"]["output"]["kit_source"]["value"]["destinations"] == [
        "${data.terraform_remote_state.cross-stack-reference-input-replica-analytics-replica.outputs."
        "cross-stack-output-awscc_s3tables_table_buckettable-bucket_515E36E8table_bucket_arn}"
    ]


@pytest.mark.synth
def test_every_policy_document_of_the_app_passes_the_kit_rules(own_app: Stacks) -> None:
    checked: set[str] = set()
    findings = []
    for stack, doc in own_app.items():
        for rtype, instances in doc.get("resource", {}).items():
            for name, body in instances.items():
                if rtype == "aws_organizations_policy" and body.get("type") != SCP_TYPE:
                    continue
                for attribute, kind in POLICY_ATTRIBUTES.get(rtype, []):
                    if attribute in body:
                        findings += lint_document(json.loads(body[attribute]), kind, f"{stack}/{rtype}.{name}")
                        checked.add(kind)
    assert findings == []
    assert {"trust", "identity", "bucket-policy", "scp", "kms-key-policy", "s3-bucket-policy"} <= checked


@pytest.mark.synth
@pytest.mark.terraform
def test_every_stack_of_the_app_passes_terraform_validate(own_app: Stacks, tmp_path: Path) -> None:
    from s3tables_kit.infra import validate
    from s3tables_kit.infra.tfvalidate import validate_together

    terraform, mirror = terraform_toolchain()
    (tmp_path / "terraform.rc").write_text(validate.cli_config(mirror))
    env = validate.tf_env(tmp_path / "terraform.rc")
    local = validate.mirror_providers(mirror)
    needed = {
        st.address: st.local_version
        for doc in own_app.values()
        for st in validate.provider_statuses(doc, local).values()
        if st.local_version and not st.satisfied
    }
    schemas = validate.provider_schemas(terraform, env, mirror, needed, validate.BUILD) if needed else {}
    for name, doc in own_app.items():
        validate.write_stack(tmp_path / "stacks" / name, validate.prepare_stack(doc, schemas, local).document)
    verdicts = validate_together(terraform, env, tmp_path / "stacks", {n: tmp_path / "stacks" / n for n in own_app})
    assert set(verdicts) == set(own_app)
    failed = {name: diags for name, (ok, diags) in verdicts.items() if not ok}
    assert failed == {}, json.dumps(failed, indent=1)
