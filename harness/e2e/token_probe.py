"""What the pinned hashicorp/aws provider does with a replication configuration's version token, checked in practice
(`make e2e-all`, after the stacks; or `python -m harness.e2e.token_probe` on its own).

S3 Tables guards `Put*Replication` and `Delete*Replication` over an existing configuration with its version token
(docs/aws-facts.md). Read in the provider's source, its replication resources send no token on create and `Read`
never refreshes the token (hashicorp/terraform-provider-aws #46675, fix in PR #46688). This probe applies one small
configuration (three table buckets, `aws_s3tables_table_bucket_replication` naming a role ARN) with the real
`terraform` and the mirror's provider to the local stand-in, which answers these calls as AWS does
(emulator/replication.py), and records what each step really does:

1. create, then an unchanged plan (the everyday path);
2. an update of the destinations with the token the create stored (a destination added by a later deploy);
3. the configuration forgotten by the state (`state rm`: a lost state, or one created outside Terraform), then an
   apply: a create over an existing configuration;
4. `terraform import`, then a plan: does the imported resource match;
5. an update after the import;
6. a change made outside Terraform (a new token), then an update with the stored, now stale, token;
7. the break-glass way out of 3-6: the live configuration deleted with its own token, then an apply that creates
   it (a gap of one apply; kept for a configuration the kit cannot take over);
8. the takeover the kit does instead (`s3tables_kit.infra.takeover`, then the plan, the adoption gate and the apply
   of that saved plan: `s3tables-kit adopt-gate --take-over --apply`) of a configuration its owners made outside
   Terraform: first a configuration that drops the owners' destination, refused by the gate with nothing applied;
9. then the one step from an empty state: imported alone, the live token written into the state, planned, gated,
   applied; the re-plan empty, the owners' destination kept, and the configuration never absent (a reader polls it
   through the apply; the stand-in counts no delete and exactly one put);
10. a token made stale between the step and the apply (the owners change it): the apply refused, their
    configuration left in place; the step again, then the apply;
11. two runs from one token with their own states: the first applies, the second is refused (stale token), the
    first's configuration in place; two saved plans of one state: the second is refused (the plan is stale);
12. the same one step for a table-level configuration (`aws_s3tables_table_replication`).

Each step prints `expected` (from the provider's source) and `observed`; the exit code is 0 when every observation
matches the expectation, 1 otherwise, 2 when Terraform or the provider mirror is missing. With a provider older than
6.25 (no replication resources: the machine image's, before `make provider`) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from emulator.process import Emulator
from harness.e2e.terraform import Terraform, cli_config, proxy_env
from harness.e2e.token_takeover import Takeover
from harness.e2e.token_world import Probe
from s3tables_kit.infra.validate import find_mirror, find_terraform, mirror_providers, tf_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None, help="where Terraform runs (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the steps as JSON here")
    args = parser.parse_args(argv)
    binary, mirror = find_terraform(), find_mirror()
    versions = mirror_providers(mirror).get("registry.terraform.io/hashicorp/aws", []) if mirror else []
    if binary is None or mirror is None or not versions:
        print("token probe: needs `terraform` and a provider mirror with hashicorp/aws", file=sys.stderr)
        return 2
    version = versions[0]
    if tuple(int(p) for p in version.split(".")[:2]) < (6, 25):
        print(f"token probe: skipped: hashicorp/aws {version} has no replication resources (>= 6.25; `make provider`)")
        return 0
    with tempfile.TemporaryDirectory(prefix="kit-token-probe-") as tmp:
        workdir = (args.workdir or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "terraform.rc").write_text(cli_config(mirror, workdir / "plugin-cache"))
        (workdir / "plugin-cache").mkdir(exist_ok=True)
        t0 = time.monotonic()
        with Emulator(log=workdir / "emulator.log") as emu:
            tf = Terraform(binary, {**tf_env(workdir / "terraform.rc"), **proxy_env(emu.url)})
            probe = Probe(tf, workdir, emu, version)
            probe.run()
            Takeover(probe).run()
            steps = probe.steps
        ok = all(s.ok for s in steps)
        print(f"token probe: hashicorp/aws {version}: {sum(s.ok for s in steps)}/{len(steps)} as expected "
              f"in {time.monotonic() - t0:.0f} s")  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps({"provider": version, "ok": ok, "steps": [asdict(s) for s in steps]},
                                            indent=2) + "\n")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
