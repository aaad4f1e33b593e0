"""`make outputs CONFIG=<your kit.toml>` reads the stacks of YOUR configuration, from the state Terraform wrote, and
the entry point never falls back to an example when KIT_CONFIG is forgotten.

Guards: `make outputs` once ran `npx cdktf output '*'` without KIT_CONFIG, so the app synthesised the seed example
and read the seed's stack list; a `cdktf deploy` with a forgotten `KIT_CONFIG=` targeted the example topology.

How the real target is run cheaply and honestly: the repository is mirrored into a temporary directory (symlinks,
so `cdktf.out/` and the state files land there), each stack of a non-example configuration is initialised and
applied by the real `terraform` with its outputs (the kit's contract values,
`s3tables_kit.topology.deploy_outputs.outputs_doc`) into the local state the kit's stacks use, then `make outputs
CONFIG=...`
runs the real cdktf CLI, which synthesises the configuration and runs `terraform output -json` in each stack directory.
The only thing not real is provider installation: cdktf runs `terraform init` first, which would download hashicorp/aws
(no network here); a wrapper named by cdktf's TERRAFORM_BINARY_NAME answers `init` as already done (the directories were
initialised with the same backend) and hands every other command to the real binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.outputs import load_outputs

ROOT = Path(__file__).resolve().parents[1]
ORGANIZATION = {"policy_id": "p-acme0001", "policy_name": "acme-replica-protection", "targets": ["ou-ab12-replicas1"]}
SKIP_ENTRIES = {"cdktf.out", "outputs.json", ".build", ".git"}


def _mirror_repo(dest: Path) -> None:
    for entry in ROOT.iterdir():
        if entry.name in SKIP_ENTRIES or entry.name.startswith("terraform.") or entry.name.endswith(".tfstate"):
            continue
        (dest / entry.name).symlink_to(entry)


def _user_config(dest: Path) -> Path:
    text = (ROOT / "examples/seed.toml").read_text(encoding="utf-8")
    user = dest / "kit.toml"
    user.write_text(text.replace("demo-dest-tablebucket", "acme-vault-usw2").replace('name = "seed"', 'name = "acme"'))
    return user


def _tf_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "KIT_", "CDKTF_"))}
    (work / "terraform.rc").write_text("# no provider installation in this test\n")
    env.update(
        CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1", TF_INPUT="0", TF_CLI_CONFIG_FILE=str(work / "terraform.rc")
    )
    return env


@pytest.mark.synth
def test_make_outputs_reads_the_stacks_of_config_from_terraform_state(tmp_path: Path) -> None:
    terraform = shutil.which("terraform")
    if terraform is None or not (ROOT / "node_modules" / ".bin" / "cdktf").exists():
        pytest.skip("needs terraform and the cdktf CLI (make setup)")
    _mirror_repo(tmp_path)
    user = _user_config(tmp_path)
    env = _tf_env(tmp_path)
    cfg = load_config(user)
    written = outputs_doc(cfg, organization=ORGANIZATION)
    assert "replica-acme-vault-usw2" in written and "replica-demo-dest-tablebucket" not in written
    # The example's replica stack, as a previous `make outputs` of the seed left it: must not be read.
    decoy = tmp_path / "cdktf.out" / "stacks" / "replica-demo-dest-tablebucket"
    for stack, outputs in {**written, decoy.name: {"kit_replica": {"table_bucket_name": "demo"}}}.items():
        d = tmp_path / "cdktf.out" / "stacks" / stack
        d.mkdir(parents=True)
        backend = {"local": {"path": f"../../../terraform.{stack}.tfstate"}}  # the kit's stacks' local state
        tf = {"terraform": {"backend": backend}, "output": {k: {"value": v} for k, v in outputs.items()}}
        (d / "cdk.tf.json").write_text(json.dumps(tf))
        for cmd in (["init", "-no-color"], ["apply", "-auto-approve", "-no-color"]):
            proc = subprocess.run([terraform, *cmd], cwd=d, env=env, capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stdout + proc.stderr
    wrapper = tmp_path / "terraform-offline"
    wrapper.write_text(f'#!/bin/sh\ncase "$1" in init|providers) exit 0;; esac\nexec {terraform} "$@"\n')
    wrapper.chmod(0o755)

    out = tmp_path / "out.json"
    make = ["make", "-s", "outputs", f"CONFIG={user.name}", f"OUTPUTS={out}"]
    proc = subprocess.run(
        make, cwd=tmp_path, env=env | {"TERRAFORM_BINARY_NAME": str(wrapper)}, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(out.read_text())
    assert sorted(got) == sorted(written), "the stacks of CONFIG, not the example's"
    assert got["replica-acme-vault-usw2"]["kit_replica"]["table_bucket_name"] == "acme-vault-usw2"
    assert load_outputs(out).replicas[0].table_bucket_name == "acme-vault-usw2"

    # Without CONFIG the target refuses (exit 2) instead of reading the example's stacks.
    proc = subprocess.run(make[:3], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "make outputs CONFIG=kit.toml" in proc.stderr


def test_the_entry_point_refuses_without_kit_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards: a `cdktf deploy` with a forgotten KIT_CONFIG once synthesised (and deployed) the seed example."""
    from s3tables_kit.infra import main as entry

    monkeypatch.delenv("KIT_CONFIG", raising=False)
    monkeypatch.setenv("KIT_OUTDIR", str(tmp_path / "out"))
    assert entry.main() == 2
    err = capsys.readouterr().err
    assert "KIT_CONFIG is not set" in err and "nothing was built" in err
    assert not (tmp_path / "out").exists()
