"""How the review summary (`s3tables_kit.policies.render`) presents the sources of each protection scheme
(`s3tables_kit.topology.model.Scheme`, chosen at load): one `[source]`, or each source of an estate with its own title,
scope and monitor, and the estate's tag-based organization layer (docs/decisions/0026-estate.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.topology.config import KitConfig


def _code(values: Iterable[str]) -> str:
    return ", ".join(f"`{v}`" for v in values) or "(none)"


def _scp_sizes(scps: Sequence[policy_documents.PolicyDoc]) -> list[str]:
    sizes = ", ".join(f"`{d.name}` {len(policy_documents.compact_json(d.document))}" for d in scps)
    return ["", f"SCP sizes (compact JSON, of 5,120 characters each): {sizes}."]


def _source_line(cfg: KitConfig) -> list[str]:
    return [f"- Source table bucket: `{src.bucket}` ({src.account_id}, {src.region})" for src in cfg.sources]


def _source_lines(cfg: KitConfig) -> list[str]:
    out = ["- Source table buckets (an estate):"]
    for src in cfg.sources:
        dests = ", ".join(f"`{r.bucket}`" for r in cfg.destinations_of(src))
        out.append(
            f"  - `{src.id}`: `{src.bucket}` ({src.account_id}, {src.region}), replication role "
            f"`{cfg.replication_role_arn_of(src)}`, replicates to {dests}"
        )
    return out


def _assurance_principals(cfg: KitConfig) -> list[tuple[str, list[str], str, list[str]]]:
    """The assurance roles (`[assurance]`): in an estate, each source's monitor roles (documents named
    `<purpose>--<stack id>`) and the estate's rehearsal role."""
    from s3tables_kit.policies import assurance

    out: list[tuple[str, list[str], str, list[str]]] = []
    for src in cfg.sources:
        for title, arns, intro, identity in assurance.summary_principals(cfg, src):
            if title.startswith("Replication monitor"):
                renamed = [policy_documents.estate_source_name(n, src.stack_id) for n in identity]
                out.append((f"{title} of `{src.id}`", arns, intro, renamed))
    return out + assurance.summary_principals(cfg, None)


def estate_section(cfg: KitConfig) -> list[str]:
    """How an estate's organization layer is built (tag-based SCPs, docs/decisions/0026-estate.md)."""
    from s3tables_kit.policies import estate

    return [
        "## The estate's organization layer: tag-based SCPs",
        "",
        "The two SCPs name no bucket and no source, so their size does not grow with the estate:",
        "",
        f"- Every protected table bucket carries the tag `{estate.TAG_CONDITION_KEY.split('/', 1)[1]}` = "
        f"`{cfg.kit.name}` (never source buckets, never tables). The replica denies match it with "
        f"`{estate.TAG_CONDITION_KEY}` on {_code([estate.any_bucket(cfg), estate.any_table(cfg)])}.",
        "- `DisassociateTableReplication` is also denied by ARN pattern on every table of the replica accounts "
        f"({_code(estate.replica_account_tables(cfg))}; `DenyReplicaDisassociationByAccount`), because whether AWS "
        "evaluates the tag condition for it is unverified.",
        "- Tagging or untagging the protection tag key on a bucket that carries it is break-glass only "
        "(`DenyProtectionTagChange`, in the guards SCP and in each protected bucket's policy); tables of a protected "
        "bucket take no tag changes at all (`DenyReplicaTagChange`).",
        f"- The replication roles of every source are exempt by one pattern, `{estate.replication_role_pattern(cfg)}`"
        ", where replication needs it. Creating a role of that name is denied to all but break-glass and the sources' "
        f"deploy roles by name ({_code(estate.deploy_role_name_patterns(cfg))}: `cdktf deploy` creates the "
        "replication roles; `DenyReplicationRoleCreation`); rewriting its trust, deleting or assuming one is "
        "break-glass only (`DenyPrivilegedRoleTampering`, `DenyAssumeReplicationRole`).",
        f"- The guardrails are matched by their one name in every account, `{estate.guardrail_pattern(cfg)}`.",
        "- The bucket, table and key policies and the guardrails name exact ARNs, as for one source: a fan-in "
        "bucket grants and exempts the replication role of each source that feeds it, and no other.",
        "",
    ]


def _assurance_principals_of_one(cfg: KitConfig) -> list[tuple[str, list[str], str, list[str]]]:
    from s3tables_kit.policies import assurance

    (src,) = cfg.sources  # the scheme of a `[source]`: one source
    return assurance.summary_principals(cfg, src)


@dataclass(frozen=True)
class SchemeSummary:
    """How the summary presents the sources of a protection scheme (`s3tables_kit.topology.model.Scheme`): one
    `[source]`, or each source of an estate with its own title, scope and monitor, and the estate's tag-based
    organization layer."""

    source_lines: Callable[[KitConfig], list[str]]
    source_title: str  # appended to a title of what belongs to one source (takes its `id`)
    role_scope: str  # appended to a replication role's introduction (takes `bucket` and `dests`)
    assurance_principals: Callable[[KitConfig], list[tuple[str, list[str], str, list[str]]]]
    organization: Callable[[KitConfig], list[str]]
    scp_sizes: Callable[[Sequence[policy_documents.PolicyDoc]], list[str]]


SCHEME_SUMMARIES = {
    "source": SchemeSummary(_source_line, "", "", _assurance_principals_of_one, lambda cfg: [], _scp_sizes),
    "sources": SchemeSummary(
        _source_lines,
        " of `{id}`",
        " Source `{bucket}`; writes {dests} only.",
        _assurance_principals,
        estate_section,
        _scp_sizes,
    ),
}


def summary_of(cfg: KitConfig) -> SchemeSummary:
    return SCHEME_SUMMARIES[cfg.scheme.key]
