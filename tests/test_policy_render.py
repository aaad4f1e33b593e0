"""policies/render.py: rendered files are deterministic, up to date, and drift fails with a readable diff."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from s3tables_kit.policies import render
from s3tables_kit.policies import statements as iam_statements


@functools.cache
def rendered() -> dict[str, str]:
    """Every example rendered once for the tests that only read the result (a render of every example is the cost)."""
    return render.render_all()


def test_render_is_deterministic() -> None:
    assert rendered() == render.render_all()


def test_committed_rendering_is_up_to_date() -> None:
    problems = render.check()
    assert problems == [], "run `make policies`:\n" + "".join(problems)


def test_json_format_pretty_with_trailing_newline() -> None:
    files = rendered()
    for rel, text in files.items():
        if rel.endswith(".json"):
            assert text.endswith("}\n")
            assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    assert {rel.split("/")[0] for rel in files} == {p.stem for p in render.example_configs()}
    assert all(f"{stem}/SUMMARY.md" in files for stem in {rel.split("/")[0] for rel in files})


def test_summary_names_principals_break_glass_risks_and_attachments() -> None:
    text = rendered()["seed/SUMMARY.md"]
    for needle in (
        "### Replication role",
        "### S3 Tables maintenance service",
        "### Recovery role",
        "### Break-glass principals",
        "## Break-glass path",
        "arn:aws:iam::111122223333:role/s3tables-break-glass",
        "Deletes destroy the replica",  # ProtectionRule.risk
        "collapse the point-in-time window",
        "Policy changes remove the protection",
        "## Documents and where they are attached",
        "table bucket demo-dest-tablebucket",
    ):
        assert needle in text, needle


def test_changing_a_statement_builder_fails_the_check_with_a_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    render.write_tree(rendered(), tmp_path)
    assert render.check(tmp_path) == []
    original = iam_statements.kms_deny_key_deletion

    def weaker(exempt_arns):  # type: ignore[no-untyped-def]
        stmt = original(exempt_arns)
        stmt["Action"] = "kms:ScheduleKeyDeletion"  # someone drops kms:DisableKey
        return stmt

    monkeypatch.setattr(iam_statements, "kms_deny_key_deletion", weaker)
    problems = render.check(tmp_path)
    assert problems
    diff = "".join(problems)
    assert "--- a/policies/rendered/multi-account/kms-key-policy--lakehouse-replica-euc1.json (committed)" in diff
    assert "+++ b/policies/rendered/multi-account/kms-key-policy--lakehouse-replica-euc1.json (rendered now)" in diff
    assert '-        "kms:DisableKey",' in diff


def test_missing_and_extra_files_are_reported(tmp_path: Path) -> None:
    render.write_tree(rendered(), tmp_path)
    (tmp_path / "seed" / "scp-protect-replicas.json").unlink()
    (tmp_path / "seed" / "old-policy.json").write_text("{}\n")
    problems = "".join(render.check(tmp_path))
    assert "missing: policies/rendered/seed/scp-protect-replicas.json" in problems
    assert "extra: policies/rendered/seed/old-policy.json" in problems


def test_cli_write_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rendered"
    (out / "gone").mkdir(parents=True)
    (out / "gone" / "stale.json").write_text("{}\n")
    assert render.main(["--out", str(out)]) == 0
    assert not (out / "gone" / "stale.json").exists()
    assert render.main(["--check", "--out", str(out)]) == 0
    (out / "seed" / "SUMMARY.md").write_text("edited by hand\n")
    assert render.main(["--check", "--out", str(out)]) == 1
    assert "Run `make policies`" in capsys.readouterr().out


# the review page names the bucket settings the deploy role refuses at one layer by what they set
SETTINGS_NAMED = {
    "PutTableBucketEncryption": "bucket encryption",
    "PutTableBucketLogging": "logging",
    "PutTableBucketMaintenanceConfiguration": "unreferenced-file removal",
    "PutTableBucketMetricsConfiguration": "metrics configuration",
    "PutTableBucketStorageClass": "storage class",
}


def test_every_below_two_row_is_named_in_the_policy_review_with_its_reason() -> None:
    """No false "below two" row (an action that names nothing of a replica prints none), and each real one is an
    action the review page's table of one-layer refusals names."""
    root = Path(__file__).resolve().parents[1]
    review = (root / "docs" / "policy-review.md").read_text(encoding="utf-8")
    named = review[review.index("A deployed replica, against its deploy role") : review.index("These two rows are")]
    below = {
        line.split("`")[1]: summary.parent.name
        for summary in sorted((root / "policies" / "rendered").glob("*/SUMMARY.md"))
        for line in summary.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `") and line.endswith("(below two!) |")
    }
    assert below, "the examples have the deploy role's one-layer rows the review page names"
    for action, example in below.items():
        short = action.removeprefix("s3tables:")
        assert f"`{short}`" in named or SETTINGS_NAMED.get(short, "\0") in named, (example, action)
    assert not any(a.startswith("kms:") for a in below)
