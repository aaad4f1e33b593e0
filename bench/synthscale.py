"""Synth at scale: 5 destinations (the service maximum) and 1,000 explicitly managed tables; and an estate of 50
source buckets (`[[sources]]`: one source stack each, fan-in vaults; `estate_config`, `python -m bench.synthscale
--estate 50`).

`scale_config` generates the configuration dict (pure; validated by `s3tables_kit.topology.config.parse_config`). The
synth runs in a fresh subprocess (`python -m bench.synthscale --child ...`) that times its phases itself: importing the
CDKTF and provider bindings, building the app (constructs), synthesising (writing cdk.tf.json). The parent samples the
whole process tree (Python + the jsii node runtime) through /proc for the peak resident memory, and also reads each
process's own high-water mark (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.sites import KMS_CREATED, SSE_S3, deploy_role, site
from s3tables_kit.topology.paths import ROOT
from s3tables_kit.topology.rules import fan_in_namespace_prefix

TIERING = "INTELLIGENT_TIERING"

# (account, region) of the five destinations; two share an account (one guardrail per account).
DESTINATIONS = (
    ("222222222222", "eu-central-1"),
    ("222222222222", "us-east-1"),
    ("333333333333", "ap-southeast-2"),
    ("333333333333", "us-west-2"),
    ("555555555555", "eu-north-1"),
)
SOURCE_ACCOUNT, SOURCE_REGION = "111111111111", "eu-west-1"

_COLUMN_SETS: tuple[tuple[list[dict[str, Any]], list[str]], ...] = (
    (
        [
            {"name": "order_id", "type": "long", "required": True},
            {"name": "customer_id", "type": "string", "required": True},
            {"name": "order_ts", "type": "timestamptz", "required": True},
            {"name": "amount", "type": "decimal(18,2)"},
            {"name": "status", "type": "string", "doc": "order status"},
        ],
        ["day(order_ts)", "bucket(16, customer_id)"],
    ),
    (
        [
            {"name": "event_id", "type": "string", "required": True},
            {"name": "event_date", "type": "date", "required": True},
            {"name": "payload", "type": "string"},
            {"name": "score", "type": "double"},
        ],
        ["month(event_date)"],
    ),
    (
        [
            {"name": "id", "type": "long", "required": True},
            {"name": "channel", "type": "string"},
            {"name": "budget", "type": "decimal(12,2)"},
        ],
        ["channel"],
    ),
    (
        [
            {"name": "sku", "type": "string", "required": True},
            {"name": "qty", "type": "int"},
            {"name": "updated_at", "type": "timestamp"},
        ],
        [],
    ),
)


def scale_config(
    destinations: int = 5, tables: int = 1000, namespaces: int = 10, table_level_replication: bool = True
) -> dict[str, Any]:
    """A valid configuration dict: `tables` tables spread over `namespaces` namespaces, all replicated to
    `destinations` destinations (table-level replication lists every table: one replication resource per table)."""
    if not 1 <= destinations <= len(DESTINATIONS):
        raise ValueError(f"destinations must be 1..{len(DESTINATIONS)}")
    if tables < namespaces or namespaces < 1:
        raise ValueError("need at least one table per namespace")
    kms = dict(KMS_CREATED)
    per_ns = [tables // namespaces + (1 if i < tables % namespaces else 0) for i in range(namespaces)]
    nss: list[dict[str, Any]] = []
    names: list[str] = []
    k = 0
    for i, n in enumerate(per_ns):
        ts: list[dict[str, Any]] = []
        for j in range(n):
            cols, parts = _COLUMN_SETS[k % len(_COLUMN_SETS)]
            t: dict[str, Any] = {"name": f"t{j:04d}", "columns": [dict(c) for c in cols]}
            if parts:
                t["partition_by"] = list(parts)
            if k % 10 == 0:
                t["snapshot_retention"] = {"max_snapshot_age_hours": 336, "min_snapshots_to_keep": 5}
            ts.append(t)
            names.append(f"ns{i:02d}.t{j:04d}")
            k += 1
        nss.append({"name": f"ns{i:02d}", "tables": ts})
    replicas = [
        site(acct, region, f"scale-replica-{region}", encryption=kms, retention=(2160, 10), storage_class=TIERING)
        for acct, region in DESTINATIONS[:destinations]
    ]
    accounts = sorted({str(r["account_id"]) for r in replicas})
    return {
        "kit": {"name": "scale"},
        "source": site(
            SOURCE_ACCOUNT, SOURCE_REGION, "scale-source", encryption=kms, retention=(168, 5), namespaces=nss
        ),
        "replicas": replicas,
        "replication": {"mode": "tables", "tables": names} if table_level_replication else {"mode": "bucket"},
        "protection": {
            "break_glass_principals": [f"arn:aws:iam::{a}:role/s3tables-break-glass" for a in accounts],
            "guardrail_attach_roles": ["data-engineer", "platform-admin"],
            "organization": {
                "management_account_id": "444444444444",
                "deploy_role_arn": deploy_role("444444444444"),
                # every replica account and the source account, directly (the configuration checks coverage)
                "targets": sorted({*accounts, SOURCE_ACCOUNT}),
            },
        },
        "recovery": {
            "replica": replicas[0]["bucket"],
            "bucket": "scale-recovery",
            "namespace": "recovered",
            "encryption": kms,
        },
    }


def count_tables(cfg: dict[str, Any]) -> int:
    sources = cfg["sources"] if "sources" in cfg else [cfg["source"]]
    return sum(len(ns.get("tables", [])) for src in sources for ns in src["namespaces"])


# An estate (`[[sources]]`): source buckets spread over these accounts x Regions (at most 10 table buckets per account
# and Region), each ten replicating into one vault of the vault account (fan-in; a vault's bucket policy grants each
# feeding source's role, and PutTableBucketPolicy takes at most 20,480 characters), every ninth source also into a
# regional replica in its own account (at most two per account).
ESTATE_SOURCE_ACCOUNTS = ("111111111111", "222222222222", "333333333333", "555555555555", "777777777777")
ESTATE_REGIONS = (("eu-west-1", "euw1", "eu-central-1"), ("us-east-1", "use1", "us-west-2"))
ESTATE_VAULT_ACCOUNT = "666666666666"
ESTATE_VAULT_REGION = "eu-central-1"
ESTATE_SOURCES_PER_VAULT = 10


def _estate_source(i: int, tables: int) -> dict[str, Any]:
    """Source `i` of the generated estate: `tables` tables in two namespaces named after its account and the source
    (a fan-in vault of several accounts' sources requires the first, and refuses two sources' same-named tables);
    every third source replicates table by table."""
    acct = ESTATE_SOURCE_ACCOUNTS[i % len(ESTATE_SOURCE_ACCOUNTS)]
    region, short, _ = ESTATE_REGIONS[(i // len(ESTATE_SOURCE_ACCOUNTS)) % 2]
    nss: list[dict[str, Any]] = []
    names: list[str] = []
    for n in range(2):
        ns = f"{fan_in_namespace_prefix(acct)}s{i:02d}_ns{n}"
        js = range(n, tables, 2)
        ts = [{"name": f"t{j:03d}", "columns": [dict(c) for c in _COLUMN_SETS[j % len(_COLUMN_SETS)][0]]} for j in js]
        nss.append({"name": ns, "tables": ts})
        names += [f"{ns}.t{j:03d}" for j in js]
    vault = f"estate-vault{i // ESTATE_SOURCES_PER_VAULT:02d}"
    return site(
        acct,
        region,
        f"estate-s{i:02d}-{short}",
        encryption=KMS_CREATED if i % 2 == 0 else SSE_S3,
        retention=(168, 5),
        id=f"s{i:02d}-{short}",
        replicate_to=[vault, *([f"estate-s{i:02d}-replica"] if i % 9 == 0 else [])],
        replication={"mode": "tables", "tables": names} if i % 3 == 0 else {"mode": "bucket"},
        namespaces=nss,
    )


def _estate_replica(account: str, region: str, bucket: str, storage_class: str) -> dict[str, Any]:
    encryption = KMS_CREATED if account == ESTATE_VAULT_ACCOUNT else SSE_S3
    return site(account, region, bucket, encryption=encryption, retention=(2160, 10), storage_class=storage_class)


def estate_config(sources: int = 50, tables_per_source: int = 10) -> dict[str, Any]:
    """A valid estate configuration dict (`[[sources]]`) of `sources` source buckets in 5 accounts x 2 Regions,
    fan-in of ten sources into each vault of the vault account, a regional replica for every ninth source, one
    protection, recovery (from the first vault) and assurance section."""
    if not 1 <= sources <= ESTATE_SOURCES_PER_VAULT * 9:  # the vault account's Region holds the recovery bucket too
        raise ValueError(f"1 to {ESTATE_SOURCES_PER_VAULT * 9} sources")
    srcs = [_estate_source(i, tables_per_source) for i in range(sources)]
    vaults = sorted({s["replicate_to"][0] for s in srcs})
    replicas = [_estate_replica(ESTATE_VAULT_ACCOUNT, ESTATE_VAULT_REGION, v, "INTELLIGENT_TIERING") for v in vaults]
    replicas += [
        _estate_replica(s["account_id"], next(v for r, _, v in ESTATE_REGIONS if r == s["region"]), b, "STANDARD")
        for s in srcs
        for b in s["replicate_to"][1:]
    ]
    accounts = sorted({ESTATE_VAULT_ACCOUNT, *(s["account_id"] for s in srcs)})
    return {
        "kit": {"name": "estate"},
        "sources": srcs,
        "replicas": replicas,
        "protection": {
            # break-glass in the vault account and one central account, as in examples/estate.toml (each principal
            # is listed in every deny of the SCPs: one per account would make them grow with the accounts)
            "break_glass_principals": [
                f"arn:aws:iam::{a}:role/s3tables-break-glass" for a in (ESTATE_VAULT_ACCOUNT, ESTATE_SOURCE_ACCOUNTS[0])
            ],
            "guardrail_attach_roles": ["data-engineer"],
            "organization": {
                "management_account_id": "444444444444",
                "deploy_role_arn": deploy_role("444444444444"),
                "targets": accounts,
            },
        },
        "recovery": {
            "replica": vaults[0],
            "bucket": "estate-recovery",
            "namespace": "recovered",
            "encryption": {"type": "kms", "kms_key": "create"},
        },
    }


# --- the child: runs in its own interpreter ----------------------------------------------------------------------


def child(config_json: Path, outdir: Path, result_json: Path) -> int:
    t0 = time.perf_counter()
    import cdktf  # noqa: F401

    t1 = time.perf_counter()
    import cdktf_cdktf_provider_aws  # noqa: F401

    from s3tables_kit.infra.app import build_app
    from s3tables_kit.topology.config import parse_config

    t2 = time.perf_counter()
    cfg = parse_config(json.loads(config_json.read_text()), str(config_json))
    t3 = time.perf_counter()
    app = build_app(cfg, outdir=str(outdir))
    t4 = time.perf_counter()
    app.synth()
    t5 = time.perf_counter()
    stacks = sorted(p.name for p in (outdir / "stacks").iterdir()) if (outdir / "stacks").is_dir() else []
    size = sum(p.stat().st_size for p in outdir.rglob("*.json"))
    resources = 0
    for s in stacks:
        doc = json.loads((outdir / "stacks" / s / "cdk.tf.json").read_text())
        resources += sum(len(v) for v in (doc.get("resource") or {}).values())
    result_json.write_text(
        json.dumps(
            {
                "import_cdktf_s": t1 - t0,
                "import_provider_s": t2 - t1,
                "parse_config_s": t3 - t2,
                "build_s": t4 - t3,
                "synth_s": t5 - t4,
                "stacks": stacks,
                "resources": resources,
                "synth_json_bytes": size,
                "python_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            }
        )
    )
    return 0


# --- the parent: process-tree memory sampling --------------------------------------------------------------------


def _ppid_map() -> dict[int, int]:
    out: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        # comm may contain spaces/parens: ppid is the 2nd field after the last ')'
        out[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _tree(root: int) -> list[int]:
    ppids = _ppid_map()
    kids: dict[int, list[int]] = {}
    for p, pp in ppids.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _status_kb(pid: int) -> tuple[str, int, int]:
    """(name, VmRSS kB, VmHWM kB) of a process, zeros when it is gone."""
    name, rss, hwm = "?", 0, 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Name:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except OSError:
        pass
    return name, rss, hwm


@dataclass
class TreeMemory:
    peak_tree_rss_kb: int = 0
    hwm_by_pid: dict[int, tuple[str, int]] = field(default_factory=dict)
    samples: int = 0

    def sample(self, root: int) -> None:
        total = 0
        for pid in _tree(root):
            name, rss, hwm = _status_kb(pid)
            total += rss
            if hwm:
                prev = self.hwm_by_pid.get(pid, (name, 0))[1]
                self.hwm_by_pid[pid] = (name, max(prev, hwm))
        self.peak_tree_rss_kb = max(self.peak_tree_rss_kb, total)
        self.samples += 1

    def by_name(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, hwm in self.hwm_by_pid.values():
            out[name] = out.get(name, 0) + hwm
        return out


def run_synth(workdir: Path, destinations: int = 5, tables: int = 1000, interval: float = 0.05) -> dict[str, Any]:
    """Generate the topology, synthesise it in a fresh interpreter, measure wall time and peak memory."""
    out = run_config_synth(workdir, scale_config(destinations, tables), interval)
    return {"destinations": destinations, **out}


def run_estate_synth(workdir: Path, sources: int = 50, tables_per_source: int = 10) -> dict[str, Any]:
    """The estate (`estate_config`: `sources` source buckets, one stack each, fan-in vaults),
    synthesised in a fresh interpreter like `run_synth`."""
    out = run_config_synth(workdir, estate_config(sources, tables_per_source))
    return {"sources": sources, **out}


def run_config_synth(workdir: Path, cfg: dict[str, Any], interval: float = 0.05) -> dict[str, Any]:
    """Synthesise the configuration dict `cfg` in a fresh interpreter (`--child`), sampling its process tree."""
    workdir.mkdir(parents=True, exist_ok=True)
    from s3tables_kit.topology.config import parse_config

    parse_config(cfg)  # fail here, not in the timed child, if the generator is wrong
    config_json = workdir / "scale-config.json"
    config_json.write_text(json.dumps(cfg))
    outdir = workdir / "cdktf.out"
    if outdir.exists():
        import shutil

        shutil.rmtree(outdir)
    result_json = workdir / "child-result.json"
    result_json.unlink(missing_ok=True)
    env = dict(os.environ)
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    env.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    mem = TreeMemory()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.synthscale", "--child", str(config_json), str(outdir), str(result_json)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    while proc.poll() is None:
        mem.sample(proc.pid)
        time.sleep(interval)
    wall = time.perf_counter() - t0
    output = proc.stdout.read() if proc.stdout else ""
    if proc.returncode != 0 or not result_json.exists():
        raise RuntimeError(f"synth child failed (exit {proc.returncode}):\n{output[-3000:]}")
    child_res = json.loads(result_json.read_text())
    return {
        "tables": count_tables(cfg),
        "wall_s": wall,
        "import_s": child_res["import_cdktf_s"] + child_res["import_provider_s"],
        "build_synth_s": child_res["parse_config_s"] + child_res["build_s"] + child_res["synth_s"],
        "peak_tree_rss_kb": mem.peak_tree_rss_kb,
        "hwm_by_process_kb": mem.by_name(),
        "samples": mem.samples,
        "children_maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        **child_res,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.synthscale")
    ap.add_argument("--child", nargs=3, metavar=("CONFIG_JSON", "OUTDIR", "RESULT_JSON"))
    ap.add_argument("--workdir", default=str(ROOT / "bench-out" / "synth-scale"))
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--destinations", type=int, default=5)
    ap.add_argument("--estate", type=int, metavar="SOURCES", help="synthesise a generated estate of SOURCES buckets")
    ns = ap.parse_args(argv)
    if ns.child:
        return child(Path(ns.child[0]), Path(ns.child[1]), Path(ns.child[2]))
    if ns.estate:
        print(json.dumps(run_estate_synth(Path(ns.workdir) / "estate", ns.estate), indent=2))
        return 0
    print(json.dumps(run_synth(Path(ns.workdir), ns.destinations, ns.tables), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
