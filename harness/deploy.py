"""The one deployer into the local AWS stand-in (`emulator/`): `deploy(cfg, standin, how=...)` creates what `cdktf
deploy` of every stack of a configuration leaves behind and returns the outputs contract of that deploy (the JSON
`npx cdktf output '*'` writes, which `s3tables_kit.topology.outputs.parse_outputs` reads).

- `how="api"`: through the public APIs Terraform calls (`harness.world`: table buckets with their encryption and
  storage class, namespaces and tables with their retention, the replica bucket policies, the replication
  configuration, the recovery bucket, the vault bucket of `[vault]`, the SCPs on the organization's targets);
  seconds. The outputs are built by the contract's builders (`s3tables_kit.topology.outputs`) from the configuration, as
  the stacks build them from Terraform's values.
- `how="terraform"`: the real Terraform apply of every stack, the `make e2e` path (`harness.e2e.run.ExampleRun`:
  plan after apply empty, destroy protection, the tools once); minutes, needs `terraform` and a provider mirror.
  The outputs are Terraform's own (`terraform output`).

Every caller that puts a topology into the stand-in goes through here: the sandbox, the failover drills,
live-verify's Terraform path, the benchmarks' lakes. No other module builds outputs for the stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from emulator.control import Control
from harness import world
from s3tables_kit.topology.backup import VAULT_STACK_ID
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.deploy_outputs import outputs_doc, recovery_outputs, replica_outputs
from s3tables_kit.topology.outputs import OUTPUT_VAULT, failover_source_value

if TYPE_CHECKING:
    from harness.e2e.run import ExampleRun

How = Literal["api", "terraform"]
FAKE_KEY = "testing"  # the stand-in's credentials: it serves every request signed with them as its default account


class Standin(Protocol):
    """A running stand-in: a started `emulator.process.Emulator`, or `RunningStandin` for one this process did not
    start."""

    @property
    def url(self) -> str: ...

    @property
    def control(self) -> Control: ...


class RunningStandin:
    """A stand-in already running at `url` (started by another process)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.control = Control(url)


class DeployError(Exception):
    """The deploy cannot run (a configuration seeding cannot serve, no Terraform toolchain) or failed."""


def client(endpoint: str, service: str, region: str) -> Any:
    """A boto3 client of the stand-in with its fake credentials (path-style S3 addressing)."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_KEY, region_name=region)
    config = Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 3})
    return session.client(service, endpoint_url=endpoint, config=config)  # type: ignore[call-overload]


def single_account(cfg: KitConfig) -> str:
    """The one account every site of `cfg` lives in (the API deploy serves all requests as one account)."""
    sites = [*cfg.sources, *cfg.replicas]
    vault = {cfg.vault.account_id} if cfg.vault else set()
    accounts = sorted({s.account_id for s in sites} | {cfg.recovery_replica.account_id} | vault)
    if len(accounts) != 1:
        raise DeployError(
            f"the API deploy serves one account, and this configuration spans {', '.join(accounts)}: deploy it by "
            "the Terraform apply of `make e2e` (how='terraform', the sandbox's --apply: one access key per account)"
        )
    return accounts[0]


def deploy(
    cfg: KitConfig | Path,
    standin: Standin,
    how: How = "api",
    *,
    tables: bool = True,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """Deploy `cfg` (a configuration, or its file) into the running `standin`; the outputs contract of the deploy.

    `tables` (api): create the declared namespaces and tables (without metadata, as Terraform creates them: a
    writer's first commit gives them their schema); without, the caller fills the source buckets (a writer engine,
    the emulator's bulk seeding) and the replication is configured on the buckets. `workdir` (terraform): where the
    synth, the Terraform state and the logs go (needed; `how="terraform"` also needs the configuration's file)."""
    if how == "terraform":
        if not isinstance(cfg, Path) or workdir is None:
            raise DeployError("how='terraform' deploys a configuration file into a work directory")
        run = terraform_apply(cfg, standin, workdir)
        doc: dict[str, Any] = json.loads(run.outputs_path.read_text(encoding="utf-8"))
        return doc
    return _api_deploy(load_config(cfg) if isinstance(cfg, Path) else cfg, standin, tables=tables)


def _api_deploy(cfg: KitConfig, standin: Standin, *, tables: bool) -> dict[str, Any]:
    account = single_account(cfg)

    def s3tables(region: str) -> Any:
        return client(standin.url, "s3tables", region)

    world.deploy_replicas(s3tables, cfg)
    world.deploy_sources(s3tables, cfg, tables=tables)
    s3tables(cfg.recovery_replica.region).create_table_bucket(
        name=cfg.recovery.bucket, encryptionConfiguration={"sseAlgorithm": "AES256"}
    )
    doc = outputs_doc(cfg, _organization(standin, cfg, account))
    if cfg.vault is not None:
        vault = doc[VAULT_STACK_ID][OUTPUT_VAULT]
        world.deploy_vault(client(standin.url, "s3", cfg.vault.region), cfg, vault["kms_key_arn"])
        vault["point_key_arn"] = world.create_point_key(client(standin.url, "kms", cfg.vault.region))
    return doc


def _organization(standin: Standin, cfg: KitConfig, account: str) -> dict[str, Any] | None:
    """The organization stack: the two SCPs attached to every target. The organization lives in the served account
    (the emulator's organizations are per account), with the configuration's OUs under their own ids."""
    org = cfg.protection.organization
    if org is None:
        return None
    ous: dict[str, list[str]] = {t: [] for t in org.targets if t.startswith(("ou-", "r-"))}
    standin.control.seed_organization(account, ous, [t for t in org.targets if t.isdigit() and t != account])
    return world.seed_organization_policies(client(standin.url, "organizations", "us-east-1"), cfg, org.targets)


def failover_outputs(cfg: KitConfig, replicas: Sequence[str], recovery_from: KitConfig) -> dict[str, Any]:
    """The outputs of a failover topology deployed into the stand-in (its configured promotion): the promoted
    bucket's stack exports `kit_source`; `replicas` (bucket names) are the replica stacks deployed, each fed by the
    promoted bucket when it is one of its destinations; the recovery stack is `recovery_from`'s (the recovery the
    failover leaves in place)."""
    from s3tables_kit.topology.deploy_outputs import site_encryption
    from s3tables_kit.topology.failover import failover_topology
    from s3tables_kit.topology.outputs import OUTPUT_SOURCE

    topo = failover_topology(cfg)
    by_name = {r.bucket: r for r in (*cfg.replicas, *topo.new_buckets)}
    dest = {d.bucket for d in topo.destinations}
    doc: dict[str, Any] = {}
    for bucket in replicas:
        site = by_name[bucket]
        feeding = [topo.promoted.bucket_arn] if bucket in dest else None
        doc[site.stack_id] = replica_outputs(cfg, site, feeding=feeding)
    promoted = doc.setdefault(topo.promoted.stack_id, {})
    promoted[OUTPUT_SOURCE] = failover_source_value(cfg, topo, encryption=site_encryption(topo.promoted))
    doc["recovery"] = recovery_outputs(recovery_from)
    return doc


# ---------------------------------------------------------------- the Terraform apply (`make e2e`) ----


def terraform_apply(config: Path, standin: Standin, workdir: Path) -> ExampleRun:
    """Apply every stack of `config` onto the running `standin` as `make e2e` does (synth, apply in order, plan
    after apply empty, destroy protection, the tools once); the run, whose `outputs_path` holds `terraform output`
    in the format `npx cdktf output` writes. DeployError when there is no toolchain or a stack or tool failed."""
    from harness.e2e.run import ExampleRun, Terraform, proxy_env, terraform_setup, toolchain

    workdir = workdir.resolve()
    found = terraform_setup(workdir)
    if found is None:
        raise DeployError("the Terraform deploy needs `terraform` and a provider mirror (see `make validate`)")
    tf, mirror = found
    tf = Terraform(tf.binary, {**tf.env, **proxy_env(standin.url)})  # S3 Control's account-prefixed host, as make e2e
    run = ExampleRun(config.resolve(), workdir, tf, standin, toolchain(tf, mirror, workdir))  # type: ignore[arg-type]
    run.run()
    if not run.ok:
        bad = [f"{s.stack}: {s.error or s.plan_after_apply}" for s in run.stacks if not s.ok]
        bad += [f"{t.tool}: exit {t.exit_code} {t.tail[-300:]}" for t in run.tools if not t.ok]
        raise DeployError(
            f"the Terraform deploy of {config.name} failed ({run.dir}): " + "; ".join(bad or ["no stack"])
        )
    return run


# ---------------------------------------------------------------- configuration files ----


def toml_text(doc: Mapping[str, Any]) -> str:
    """A configuration dict as TOML, every top-level key an inline table or value: the file of a configuration a
    harness derives (the tools read configurations from files)."""

    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return str(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list | tuple):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(str(k))} = {val(x)}" for k, x in v.items()) + " }"
        raise TypeError(f"not expressible here: {v!r}")

    return "".join(f"{json.dumps(k)} = {val(v)}\n" for k, v in doc.items())
