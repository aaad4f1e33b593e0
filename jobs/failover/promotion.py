"""Which configuration the failover tool builds the documents of a promotion from (pure: no AWS, no Spark).

Before any failover every bucket the tool may promote is an entry of `[[replicas]]`, and `--config` is that
configuration, unchanged. Once a failover topology is deployed (`[failover] promoted_bucket` set), the replicas of
the promoted source are its destinations (`replicate_to`): remaining `[[replicas]]`, and `[[failover.new_buckets]]`
that no `[[replicas]]` entry names. Promoting one of those is a failover of the promoted source: its documents are
those of a promoted primary (writers of its account, its deploy role, break-glass), built by the same
`s3tables_kit.policies.failover.failover_documents` from the configuration in which the new buckets are replicas too.
The outputs of the failover topology already describe that promotion: their source is the promoted bucket, so the plan's
RPO, replication status and other replicas are read against the new source.
"""

from __future__ import annotations

from s3tables_kit.topology.config import KitConfig


def promotion_config(cfg: KitConfig, bucket: str) -> KitConfig:
    """`cfg` itself when `bucket` is a `[[replicas]]` entry (or unknown: the documents builder names the error);
    for a new bucket of the configured failover, `cfg` with the new buckets added to `replicas`, so the promotion of
    that destination is planned like that of any replica (writers of its account, its deploy role, break-glass).
    In an estate, the documents builder promotes `bucket` among the destinations of the one source feeding it
    (`s3tables_kit.topology.failover.promotion_source`; a fan-in replica is refused), so no other source's grants are
    touched."""
    if any(r.bucket == bucket for r in cfg.replicas):
        return cfg
    fo = cfg.failover
    if fo is None or not any(b.bucket == bucket for b in fo.new_buckets):
        return cfg
    added = tuple(b.bucket for b in fo.new_buckets)  # destinations of the promoted source, as the replicas are
    sources = tuple(s.model_copy(update={"replicate_to": (*s.replicate_to, *added)}) for s in cfg.sources)
    return cfg.model_copy(update={"sources": sources, "replicas": (*cfg.replicas, *fo.new_buckets)})
