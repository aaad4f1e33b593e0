"""The known bad edits of a configuration, fed to every command an engineer runs on one (`synth`, `summary`,
`policies`, `explain`, `adopt-gate`): each answers with exit 2 and one line per problem naming the field, never a
traceback; and a flag is never silently ignored (`--endpoint-url` beside `$AWS_ENDPOINT_URL`, a Region that does not
exist). Everything runs in-process through `s3tables_kit.cli.main` (the `s3tables-kit` command) and the synth entry
point's configuration step (`s3tables_kit.infra.env.read_env_config`, before any provider binding is imported)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from s3tables_kit import cli
from s3tables_kit.infra.env import read_env_config
from s3tables_kit.infra.main import main as synth_main
from tests.ops_fixtures import OpsEnv, ops_env  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PRINCIPAL = "arn:aws:iam::111122223333:role/somebody"
ESTATE = (EXAMPLES / "estate.toml").read_text()
SALES_REPLICA = ESTATE[ESTATE.index("# The regional replica of the sales bucket") : ESTATE.index("[protection]")]
SALES = ESTATE[ESTATE.index('[[sources]]\nid = "sales-euw1"') : ESTATE.index('[[sources]]\nid = "marketing-euw1"')]


def _edit(where: Path, example: str, *replace: tuple[str, str], policy: object = None) -> Path:
    """`examples/<example>` with text replaced, written to `where/kit.toml` (with the adopt example's policy file, or
    `policy` in its place)."""
    text = (EXAMPLES / example).read_text()
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    where.mkdir(parents=True)
    if example == "adopt.toml":
        shutil.copytree(EXAMPLES / "adopt", where / "adopt")
        if policy is not None:
            (where / "adopt" / "bucket-policy-sales-lake.json").write_text(json.dumps(policy))
    (where / "kit.toml").write_text(text)
    return where / "kit.toml"


def _oversized() -> dict[str, object]:
    """The adopter's policy with a grant to 500 roles: the merged bucket policy is over the 20,480 characters."""
    doc = json.loads((EXAMPLES / "adopt" / "bucket-policy-sales-lake.json").read_text())
    readers = [f"arn:aws:iam::111122223333:role/reader-{i:04d}" for i in range(500)]
    doc["Statement"].append({**doc["Statement"][0], "Sid": "ManyReaders", "Principal": {"AWS": readers}})
    return doc


def _sidless() -> dict[str, object]:
    doc = json.loads((EXAMPLES / "adopt" / "bucket-policy-sales-lake.json").read_text())
    for statement in doc["Statement"]:
        statement.pop("Sid", None)
    return doc


# (name, the edit, a line every command's answer holds)
BAD_EDITS: list[tuple[str, Callable[[Path], Path], str]] = [
    (
        "dangling recovery replica",
        lambda d: _edit(d, "seed.toml", ('replica = "demo-dest-tablebucket"', 'replica = "gone-bucket"')),
        "recovery.replica: 'gone-bucket' is not the bucket of any entry in replicas",
    ),
    (
        "dangling recovery replica in an estate",
        lambda d: _edit(d, "estate.toml", ('replica = "estate-vault-euc1"', 'replica = "estate-gone"')),
        "recovery.replica: 'estate-gone' is not the bucket of any entry in replicas",
    ),
    (
        "replicate_to names a removed replica",
        lambda d: _edit(
            d, "estate.toml", ('"estate-vault-euc1", "estate-sales-replica-euc1"]', '"estate-vault-euc1"]')
        ),
        "replicas[1].bucket: no source replicates to 'estate-sales-replica-euc1'",
    ),
    (
        "the vault's tables name a removed source's namespace",
        lambda d: _edit(
            d,
            "estate.toml",
            (SALES, ""),
            (SALES_REPLICA, ""),
            (
                "[state]",
                '[vault]\naccount_id = "666666666666"\nregion = "eu-central-1"\nretention_days = 365\n'
                'tables = ["acct111111111111_sales.*"]\n\n[state]',
            ),
        ),
        "vault.tables[0]: namespace 'acct111111111111_sales' reaches the recovery replica 'estate-vault-euc1' from no",
    ),
    (
        "a Sid-less adopter statement",
        lambda d: _edit(d, "adopt.toml", policy=_sidless()),
        "[KIT-ADOPT1 AdoptedStatementSid] has no Sid",
    ),
    (
        "a policy over its quota",
        lambda d: _edit(d, "adopt.toml", policy=_oversized()),
        "[KIT-IAM9 TablesResourcePolicySize] source-bucket-policy: bucket-policy is",
    ),
]


def _commands(config: Path, tmp: Path) -> dict[str, list[str]]:
    examples = tmp / "examples"
    if not examples.exists():
        shutil.copytree(config.parent, examples)
    return {
        "summary": ["summary", "--config", str(config)],
        "policies": ["policies", "--examples", str(examples), "--out", str(tmp / "rendered")],
        "explain": [
            "explain",
            "--config",
            str(config),
            "--principal",
            PRINCIPAL,
            "--action",
            "s3tables:DeleteTableBucket",
            "--resource",
            "arn:aws:s3tables:us-west-2:111122223333:bucket/any-bucket",
        ],
        "adopt-gate": ["adopt-gate", "--config", str(config), "--plan-json", str(ROOT / "README.md")],
    }


@pytest.mark.parametrize(("name", "edit", "line"), BAD_EDITS, ids=[b[0] for b in BAD_EDITS])
def test_every_command_refuses_a_bad_edit_in_lines_with_exit_2(
    name: str,
    edit: Callable[[Path], Path],
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = edit(tmp_path / "cfg")
    for command, argv in _commands(config, tmp_path).items():
        assert cli.main(argv) == 2, (command, capsys.readouterr())
        err = capsys.readouterr().err
        assert line in err and "Traceback" not in err, (command, err)
    # `make synth` / `cdktf synth` / `cdktf deploy`: refused before anything is built (or the bindings load).
    monkeypatch.setenv("KIT_CONFIG", str(config))
    assert synth_main() == 2
    assert line in capsys.readouterr().err


def test_a_plan_that_is_not_a_plan_and_a_proposal_left_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _edit(
        tmp_path / "cfg",
        "seed.toml",
        ('management_account_id = "999988887777"', 'management_account_id = "000000000000"'),
        ('alarm_subscriptions = [{ protocol = "email", endpoint = "oncall@example.com" }]', "alarm_subscriptions = []"),
    )
    (tmp_path / "state.json").write_text('{"format_version":"1.0"}')
    assert cli.main(["adopt-gate", "--config", str(config), "--plan-json", str(tmp_path / "state.json")]) == 2
    assert capsys.readouterr().err == (
        "adopt-gate: state.json: not a saved plan (no planned_values, resource_changes): write it with `terraform "
        "plan -out=tfplan` and `terraform show -json tfplan` (without the plan file, show prints the state)\n"
    )
    # The proposal's placeholders: synth and deploy refuse them naming each field; summary says so.
    monkeypatch.setenv("KIT_CONFIG", str(config))
    assert read_env_config() is None
    err = capsys.readouterr().err
    assert "protection.organization.management_account_id: still the proposal's placeholder 000000000000" in err
    assert "assurance.alarm_subscriptions: still the proposal's empty list" in err
    assert cli.main(["summary", "--config", str(config)]) == 0
    assert "management_account_id: still the proposal's placeholder" in capsys.readouterr().err


def test_flags_are_never_silently_ignored(
    ops_env: OpsEnv,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--endpoint-url` wins over `$AWS_ENDPOINT_URL` (here a port nobody listens on); a Region that does not exist is
    named; `--version` answers."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    ops_env.clients().s3tables("us-east-1").create_table_bucket(name="flag-lake")
    out = tmp_path / "out"
    argv = ["discover", "--region", "us-east-1", "--endpoint-url", ops_env.endpoint, "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "flag-lake" in (out / "report.txt").read_text()
    capsys.readouterr()
    assert cli.main(["discover", "--region", "eu-wset-1", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == (
        "discover: --region eu-wset-1: unknown AWS Region (botocore "
        f"{__import__('botocore').__version__} knows none such); did you mean eu-west-1?\n"
    )
    assert cli.main(["--version"]) == 0 and capsys.readouterr().out.startswith("s3tables-kit ")


def test_the_proposals_policies_render_for_review(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`s3tables-kit policies --examples discover-out` on a proposal of two buckets (each with its replica, the
    recovery reading the first's): every document rendered, and the proposal's placeholders are only warned of."""
    from s3tables_kit.jobs.ops.discover_plan import Destination, bucket_plan, propose_toml
    from s3tables_kit.jobs.ops.discover_read import BucketFound

    def found(name: str) -> BucketFound:
        b = BucketFound(f"arn:aws:s3tables:us-east-1:111122223333:bucket/{name}", name, "us-east-1", "111122223333")
        b.namespaces, b.encryption, b.storage_class = ["sales"], {"sseAlgorithm": "AES256"}, "STANDARD"
        return b

    plans = [bucket_plan(found(n), [Destination.parse("us-west-2")]) for n in ("lake-a", "lake-b")]
    out = tmp_path / "discover-out"
    out.mkdir()
    (out / "kit.toml").write_text(propose_toml("lake", plans))
    assert cli.main(["policies", "--examples", str(out), "--out", str(tmp_path / "review")]) == 0, capsys.readouterr()
    rendered = {p.name for p in (tmp_path / "review" / "kit").iterdir()}
    assert "SUMMARY.md" in rendered and any(n.startswith("replica-bucket-policy") for n in rendered)
