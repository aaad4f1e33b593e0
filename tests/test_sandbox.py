"""`make sandbox` (harness/sandbox.py) and the "Practise this locally" section each runbook opens with.

One sandbox for the module (seeded: the seed example with real Iceberg tables, replicated with the paths rewritten
for the destination). Every command of the practise sections of docs/assurance.md, docs/recovery.md and
docs/failover.md is read from the markdown and run against it exactly as written: `source sandbox-out/env.sh` applies
the file the sandbox wrote; `make <target> ARGS="..."` runs the module the Makefile's recipe of that target runs, in
this process, with `ARGS` expanded by the environment like a shell would (`make recover`'s spark-submit recipe runs
the same CLI on the test session's Spark); `python -m <module> ...` runs that module's `main` with the words after it.
Each command's exit code must be the one its comment states. Pages run in the order assurance, recovery, failover:
the promotion consumes the replica. A runbook further down a page with its own `### Practise this locally` (the vault's
restore, `make drill-vault`) runs after its page's opening section.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.sandbox import Sandbox, instructions, start
from tests.spark_fixtures import stand_in_credentials

ROOT = Path(__file__).resolve().parents[1]
PRACTISE = "## Practise this locally"
SETUP_LINES = ("make sandbox", "source sandbox-out/env.sh")
EXIT_RE = re.compile(r"#\s*exit (\d)\b")


@dataclass(frozen=True)
class Command:
    text: str  # as a user types it (continuation lines joined)
    exit_code: int | None  # from the comment; None for the set-up lines


def practise_section(page: str) -> str:
    """The page's first `## ` section, which must be the practise section."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    sections = re.split(r"^(?=## )", text, flags=re.M)
    assert len(sections) > 1 and sections[1].startswith(PRACTISE + "\n"), f"docs/{page} does not open with it"
    return sections[1]


def practise_subsection(page: str, parent: str) -> str:
    """The `### Practise this locally` of the page's `## <parent>` section (a runbook further down the page)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    section = next((s for s in re.split(r"^(?=## )", text, flags=re.M) if s.startswith(f"## {parent}\n")), "")
    sub = next((s for s in re.split(r"^(?=### )", section, flags=re.M) if s.startswith("#" + PRACTISE + "\n")), "")
    assert sub, f"docs/{page}: no `#{PRACTISE}` in `## {parent}`"
    return sub


def practise_commands(page: str, section: str | None = None) -> list[Command]:
    """The commands of the fenced bash block(s) of the practise section (the page's opening one unless given),
    continuation lines joined."""
    blocks = re.findall(r"^```bash\n(.*?)^```", section or practise_section(page), flags=re.M | re.S)
    assert blocks, f"docs/{page}: no ```bash block in the practise section"
    joined = re.sub(r"\\\n\s*", "", "".join(blocks))
    out = []
    for line in joined.splitlines():
        if not line.strip():
            continue
        command, _, comment = line.partition(" #")
        found = EXIT_RE.search("#" + comment)
        out.append(Command(command.strip(), int(found.group(1)) if found else None))
    return out


def makefile_recipes() -> dict[str, list[str]]:
    recipes: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        head = re.match(r"^([a-zA-Z0-9_-]+):", line)
        if head and not line.startswith("\t"):
            current = recipes.setdefault(head.group(1), [])
        elif line.startswith("\t") and current is not None:
            current.append(line.strip())
    return recipes


def entry_point(target: str) -> tuple[str, str]:
    """("module", module name) for a `$(PY) -m <module> $(ARGS)` recipe or a `$(KIT) <command> $(ARGS)` one (the
    module of that `s3tables-kit` command), ("recover", "") for the recovery, which runs on the test session's Spark."""
    from s3tables_kit.cli import BY_NAME

    recipe = " ".join(makefile_recipes()[target])
    m = re.search(r"\$\(PY\) -m (\S+) \$\(ARGS\)", recipe)
    if m:
        return "module", m.group(1)
    m = re.search(r"\$\(KIT\) (\S+) \$\(ARGS\)", recipe)
    if m:
        return ("recover", "") if m.group(1) == "recover" else ("module", BY_NAME[m.group(1)].module)
    assert "jobs/recover_entry.py $(ARGS)" in recipe, f"make {target}: unknown recipe {recipe}"
    return "recover", ""


def module_main(name: str) -> Callable[[list[str]], int]:
    """What `python -m name` runs: the module's `main`, or for a package the `main` its `__main__` imports."""
    mod = importlib.import_module(name)
    if hasattr(mod, "main"):
        return mod.main
    source = (Path(mod.__file__ or "").parent / "__main__.py").read_text(encoding="utf-8")
    found = re.search(r"^from (\S+) import main$", source, flags=re.M)
    assert found, f"{name}/__main__.py"
    return importlib.import_module(found.group(1)).main


def apply_env_file(path: Path, mp: pytest.MonkeyPatch) -> None:
    for line in path.read_text(encoding="utf-8").splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["unset"]:
            for name in words[1:]:
                mp.delenv(name, raising=False)
        elif words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            mp.setenv(name, value)


class Runner:
    """Runs practise commands in `workdir` (holding `sandbox-out/` and `examples/`) like a shell there would."""

    def __init__(self, workdir: Path, spark: Any = None) -> None:
        self.workdir = workdir
        self.spark = spark

    def run(self, command: Command, mp: pytest.MonkeyPatch) -> int | None:
        if command.text == "source sandbox-out/env.sh":
            apply_env_file(self.workdir / "sandbox-out" / "env.sh", mp)
            return None
        if command.text == "make sandbox":
            assert (self.workdir / "sandbox-out" / "outputs.json").is_file()
            return None
        words = shlex.split(command.text)
        if words[:2] == ["python", "-m"]:
            return module_main(words[2])(words[3:])
        assert words[0] == "make" and len(words) == 3 and words[2].startswith("ARGS="), command.text
        argv = shlex.split(os.path.expandvars(words[2].removeprefix("ARGS=")))
        kind, name = entry_point(words[1])
        if kind == "module":
            return module_main(name)(argv)
        from s3tables_kit.jobs.recover.cli import main as recover_main

        return recover_main(argv, spark_factory=self.session)

    def session(self, conf: dict[str, str]) -> Any:
        """The session's Spark with the recovery's catalogs (Spark caches a loaded catalog by name: forget them)."""
        from s3tables_kit.jobs.spark import add_catalogs

        assert self.spark is not None, "the recovery needs Spark"
        self.spark._jsparkSession.sessionState().catalogManager().reset()
        # A catalog name an earlier command registered keeps its old settings (`catalog-impl` beside a new `type`).
        names = {k.split(".")[3] for k in conf if k.startswith("spark.sql.catalog.") and k.count(".") >= 3}
        for row in self.spark.sql("SET").collect():
            if any(row[0] == f"spark.sql.catalog.{n}" or row[0].startswith(f"spark.sql.catalog.{n}.") for n in names):
                self.spark.conf.unset(row[0])
        add_catalogs(self.spark, conf)
        return self.spark

    def run_page(self, page: str) -> list[tuple[str, int | None, int | None]]:
        """(command, expected, got) for every command of the page's practise section."""
        results = []
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(self.workdir)
            for command in practise_commands(page):
                results.append((command.text, command.exit_code, self.run(command, mp)))
        return results


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, Path]]:
    workdir = tmp_path_factory.mktemp("practise")
    (workdir / "examples").symlink_to(ROOT / "examples")
    sb = start(ROOT / "examples" / "seed.toml", workdir / "sandbox-out", port=None, say=lambda _: None)
    try:
        yield sb, workdir
    finally:
        sb.stop()


# ---------------------------------------------------------------- the pages (no sandbox) ----


@pytest.mark.parametrize("page", ["assurance.md", "recovery.md", "failover.md"])
def test_each_runbook_opens_with_a_practise_section_of_runnable_commands(page: str) -> None:
    commands = practise_commands(page)
    assert [c.text for c in commands[:2]] == list(SETUP_LINES)
    recipes = makefile_recipes()
    for c in commands[2:]:
        assert c.exit_code is not None, f"docs/{page}: `{c.text}` states no exit code"
        words = shlex.split(c.text)
        if words[:2] == ["python", "-m"]:  # a tool that reads only the configuration (explain)
            assert words[2].startswith("s3tables_kit.") and callable(module_main(words[2])), c.text
            continue
        assert words[0] == "make" and words[1] in recipes, c.text
        assert "sandbox-out/outputs.json" in c.text, c.text
    assert any(c.exit_code == 0 for c in commands)


def test_make_sandbox_is_a_documented_target() -> None:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^sandbox: setup ## \S", text, flags=re.M)
    assert entry_point("sandbox") == ("module", "harness.sandbox")
    assert "make sandbox" in (ROOT / "README.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------- against the sandbox ----


def test_sandbox_writes_outputs_exports_and_prints_the_commands(sandbox: tuple[Sandbox, Path]) -> None:
    from s3tables_kit.topology.outputs import load_outputs

    sb, workdir = sandbox
    outputs = load_outputs(workdir / "sandbox-out" / "outputs.json")
    assert [s.table_bucket_name for s in outputs.sources] == ["demo-source-tablebucket"]
    assert outputs.recovery_replica.table_bucket_name == "demo-dest-tablebucket"
    assert sb.tables == ["analytics.orders"]
    env_file = (workdir / "sandbox-out" / "env.sh").read_text(encoding="utf-8")
    assert f"export AWS_ENDPOINT_URL={sb.endpoint}\n" in env_file
    text = instructions(sb, "examples/seed.toml", "sandbox-out")
    assert sb.endpoint in text and f"export AWS_ENDPOINT_URL={sb.endpoint}" in text
    printed = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("make ")]
    assert len(printed) >= 6 and all(shlex.split(p)[1] in makefile_recipes() for p in printed)
    assert "--as-of $SANDBOX_POINT_IN_TIME --target-namespace recovered_pit" in text  # beside the latest copy
    assert f"export SANDBOX_POINT_IN_TIME={sb.between_commits}\n" in env_file


def test_practise_assurance(sandbox: tuple[Sandbox, Path]) -> None:
    _, workdir = sandbox
    results = Runner(workdir).run_page("assurance.md")
    assert [(cmd, got) for cmd, want, got in results if want != got] == []


def sandbox_credentials(sb: Sandbox) -> dict[str, str]:
    """The sandbox's variables for Spark's workers, all but its endpoint (the recovery gets it as --endpoint-url)."""
    return {k: v for k, v in sb.env().items() if k != "AWS_ENDPOINT_URL"}


@pytest.mark.spark
def test_practise_recovery(sandbox: tuple[Sandbox, Path], spark: Any) -> None:
    sb, workdir = sandbox
    with stand_in_credentials(spark, sandbox_credentials(sb)):
        results = Runner(workdir, spark).run_page("recovery.md")
    assert [(cmd, got) for cmd, want, got in results if want != got] == []
    s3t = _s3tables(sb, sb.cfg.recovery_replica.region)
    recovered = s3t.list_tables(tableBucketARN=sb.cfg.recovery_bucket_arn, namespace="recovered")["tables"]
    assert [t["name"] for t in recovered] == ["orders"]
    at_point = s3t.list_tables(tableBucketARN=sb.cfg.recovery_bucket_arn, namespace="recovered_pit")["tables"]
    assert [t["name"] for t in at_point] == ["orders"]  # the point-in-time step, in its own namespace


@pytest.mark.spark
def test_practise_the_vault_restore(sandbox: tuple[Sandbox, Path], spark: Any, tmp_path: Path) -> None:
    """The vault runbook's practise step, further down docs/recovery.md, as written: `make drill-vault` runs
    `harness.drills.vault`, here its steps on this module's stand-in and the session's Spark (its `main` would start
    both of its own), in a vault bucket of its own."""
    from harness.drills import vault as drill
    from harness.drills.seed import EMULATOR_ENV

    commands = practise_commands("recovery.md", practise_subsection("recovery.md", "Restore from the vault"))
    assert [(c.text, c.exit_code) for c in commands] == [("make drill-vault", 0)]
    assert entry_point("drill-vault") == ("module", drill.__name__)
    sb, _ = sandbox
    bucket = f"kit-backup-vault-{uuid.uuid4().hex[:12]}"
    with stand_in_credentials(spark, sandbox_credentials(sb)), pytest.MonkeyPatch.context() as mp:
        for k, v in EMULATOR_ENV.items():
            mp.setenv(k, v)
        mp.delenv("AWS_ENDPOINT_URL", raising=False)
        code = drill.drill(sb.endpoint, tmp_path, bucket=bucket, session=Runner(tmp_path, spark).session)
    assert code == 0  # point 1 restored equal to the replica as it was (read by pyiceberg); the locked delete refused


def test_practise_failover(sandbox: tuple[Sandbox, Path]) -> None:
    sb, workdir = sandbox
    results = Runner(workdir).run_page("failover.md")
    assert [(cmd, got) for cmd, want, got in results if want != got] == []
    replica = sb.cfg.recovery_replica
    table = _s3tables(sb, replica.region).get_table(
        tableBucketARN=replica.bucket_arn, namespace="analytics", name="orders"
    )
    assert "replicationInformation" not in (table.get("managedTableInformation") or {})  # promoted: writable


def _s3tables(sb: Sandbox, region: str) -> Any:
    import boto3

    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region)
    return session.client("s3tables", endpoint_url=sb.endpoint)
