"""A short human summary of what `cdktf deploy` would create for a configuration: stacks, resource counts by type,
the protective denies with their exemptions, and the outputs. `make summary` (and the first part of `make demo`)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from s3tables_kit.infra.env import read_env_config
from s3tables_kit.topology.config import KitConfig


def summarize(stacks: dict[str, dict[str, Any]]) -> str:
    lines: list[str] = []
    for name, doc in stacks.items():
        counts = Counter({rtype: len(items) for rtype, items in doc.get("resource", {}).items()})
        provider = doc.get("provider", {}).get("aws", [{}])[0]
        where = f"{','.join(provider.get('allowed_account_ids', []))} {provider.get('region', '')}".strip()
        lines.append(f"stack {name}  [{where}]  {sum(counts.values())} resources")
        for rtype, n in sorted(counts.items()):
            lines.append(f"    {n:3d}  {rtype}")
        for pol in doc.get("resource", {}).get("aws_s3tables_table_bucket_policy", {}).values():
            lines.append("    protective denies in the bucket policy:")
            for st in json.loads(pol["resource_policy"])["Statement"]:
                if st["Effect"] != "Deny":
                    lines.append(f"      allow {st['Sid']}")
                    continue
                actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
                exempt = st["Condition"]["ArnNotLike"]["aws:PrincipalArn"]
                exempt = exempt if isinstance(exempt, list) else [exempt]
                names = ", ".join(a.split(":")[1] for a in actions)
                who = ", ".join(e.rsplit("/", 1)[-1] for e in exempt)
                svc = " + maintenance service" if "StringNotEqualsIfExists" in st["Condition"] else ""
                lines.append(f"      {st['Sid']}: {names}  (except {who}{svc})")
        for out, body in doc.get("output", {}).items():
            if out.startswith("kit_"):
                lines.append(f"    output {out}: {', '.join(sorted(body['value']))}")
    return "\n".join(lines)


def headline(cfg: KitConfig) -> str:
    """`1 replica(s), replication mode tables` for `[source]`; the sources and their modes for an estate."""
    if not cfg.is_estate:
        return f"{len(cfg.replicas)} replica(s), replication mode {cfg.replication.mode}"
    modes = ", ".join(f"{s.id} {cfg.replication_of(s).mode}" for s in cfg.sources)
    return f"{len(cfg.sources)} source(s) ({modes}), {len(cfg.replicas)} replica(s)"


def main() -> int:
    loaded = read_env_config()
    if loaded is None:
        return 2
    env, cfg = loaded
    from s3tables_kit.infra.golden import synth_example

    print(f"== {env.config_path}: {headline(cfg)}")
    with tempfile.TemporaryDirectory() as tmp:
        stacks = synth_example(Path(env.config_path), Path(tmp))
    print(summarize(stacks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
