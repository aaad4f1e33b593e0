"""`make provider`'s pure parts (harness/provider_build.py): the service set is derived from the stacks' types through
the provider's own generated service packages, and the limited service list keeps exactly those packages."""

from __future__ import annotations

from pathlib import Path

from harness.provider_build import (
    ALWAYS,
    MODULE,
    limited_service_list,
    service_index,
    services_for,
    stack_types,
)
from s3tables_kit.infra.provider_cache import current_mirror, verified_mirror

GEN = f"""package sdkv2

import (
\t"context"

\t"{MODULE}/internal/conns"
\t"{MODULE}/internal/service/cloudwatch"
\t"{MODULE}/internal/service/meta"
\t"{MODULE}/internal/service/s3"
\t"{MODULE}/internal/service/s3control"
\t"{MODULE}/internal/service/sts"
\t"{MODULE}/internal/service/wafv2"
)

func servicePackages(ctx context.Context) []conns.ServicePackage {{
\tv := []conns.ServicePackage{{
\t\tcloudwatch.ServicePackage(ctx),
\t\tmeta.ServicePackage(ctx),
\t\ts3.ServicePackage(ctx),
\t\ts3control.ServicePackage(ctx),
\t\tsts.ServicePackage(ctx),
\t\twafv2.ServicePackage(ctx),
\t}}
\treturn v
}}
"""


def _package(root: Path, name: str, types: list[str]) -> None:
    d = root / "internal" / "service" / name
    d.mkdir(parents=True)
    body = "".join(f'\t\t{{\n\t\t\tTypeName: "{t}",\n\t\t}},\n' for t in types)
    (d / "service_package_gen.go").write_text(f"package {name}\n\nvar x = []any{{\n{body}}}\n")


def test_services_are_derived_from_the_stacks_types(tmp_path: Path) -> None:
    _package(tmp_path, "cloudwatch", ["aws_cloudwatch_metric_alarm", "aws_cloudwatch_dashboard"])
    _package(tmp_path, "s3", ["aws_s3_bucket"])
    _package(tmp_path, "wafv2", ["aws_wafv2_web_acl"])
    _package(tmp_path, "meta", ["aws_partition"])
    docs = [
        {"resource": {"aws_s3_bucket": {}, "awscc_s3tables_table_bucket": {}, "terraform_data": {}}},
        {"resource": {"aws_cloudwatch_dashboard": {}}, "data": {"aws_partition": {}}},
    ]
    types = stack_types(docs)
    assert types == {"aws_s3_bucket", "aws_cloudwatch_dashboard", "aws_partition"}
    services, unknown = services_for(types | {"aws_nowhere"}, service_index(tmp_path))
    assert unknown == ["aws_nowhere"]
    assert services == {"cloudwatch", "s3", "s3control", "meta"} | ALWAYS  # s3 brings s3control; no wafv2


def test_the_limited_list_registers_only_the_kept_packages() -> None:
    out = limited_service_list(GEN, {"cloudwatch", "meta", "s3", "s3control", "sts"})
    assert "wafv2" not in out
    for pkg in ("cloudwatch", "meta", "s3", "s3control", "sts"):
        assert f'internal/service/{pkg}"' in out and f"{pkg}.ServicePackage(ctx)," in out
    assert '"context"' in out and "internal/conns" in out and out.count("\n") == GEN.count("\n") - 2


def test_a_mirror_is_preferred_only_once_built_and_used_by_ci_only_once_verified(tmp_path: Path) -> None:
    assert current_mirror(tmp_path) is None and verified_mirror(tmp_path) is None
    build = tmp_path / "6.47.1-abc"
    (build / "registry.terraform.io" / "hashicorp" / "aws").mkdir(parents=True)
    (tmp_path / "current").symlink_to(build.name)
    assert current_mirror(tmp_path) == build.resolve() and verified_mirror(tmp_path) is None
    (build / "e2e-passed").write_text("ok\n")
    assert verified_mirror(tmp_path) == build.resolve()
