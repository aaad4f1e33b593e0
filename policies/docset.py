"""Every policy document of one topology, built in one call: `build(cfg) -> DocumentSet`.

`python -m s3tables_kit.policies.render` writes this set to `policies/rendered/<example>/`, and
`s3tables_kit.infra.app.build_app` builds it once and hands it to the stacks, whose constructs take the document they
deploy from it. What reviewers read and what `cdktf deploy` puts in place are therefore the same object by construction;
the knowledge of which documents a topology has lives in one place (`s3tables_kit.policies.documents.build_documents`,
which appends `s3tables_kit.policies.assurance.documents`).

Documents are looked up by purpose and site, the two halves of their rendered name `<purpose>--<site>` (e.g.
`replica-bucket-policy--<bucket>`, `replica-guardrail--<account>`, `kms-key-policy--<bucket>`,
`kms-key-policy--alarm-topic-<stack>`), or by purpose alone for the topology's single documents
(`replication-role-trust`, `recovery-role-permissions`, ...). A document that names a resource known only after
apply carries a placeholder in the rendered form; the deploying construct binds it (`emr_application_arn=`).

The failover topology (`[failover] promoted_bucket`) is built from the same set: its stacks look documents
up by the same names, and the set resolves each name the promotion changes (`DocumentSet.deploys`, from
`PolicyDoc.deploys_as`) to the reviewed `failover--<promoted>--<document>` candidate. No stack takes a document
through a parameter of its own, so "deployed = reviewed" holds for that topology by construction too (one protection
engine for both topologies, `s3tables_kit.policies.protection`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from s3tables_kit.policies.documents import build_documents, emr_application_arn, scheme_of, source_documents
from s3tables_kit.policies.failover import failover_policy_docs
from s3tables_kit.policies.freeze import freeze_policy_docs
from s3tables_kit.policies.model import Document, PolicyDoc
from s3tables_kit.policies.parts import SITE_SEPARATOR, part_name
from s3tables_kit.topology.config import KitConfig, Replica, Source


def _substitute(node: Any, values: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: _substitute(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, values) for v in node]
    if isinstance(node, str):
        return values.get(node, node)
    return node


def _contains(node: Any, value: str) -> bool:
    if isinstance(node, dict):
        return any(_contains(v, value) for v in node.values())
    if isinstance(node, list):
        return any(_contains(v, value) for v in node)
    return node == value


@dataclass(frozen=True)
class DocumentSet:
    """The documents of one topology (immutable: lookups return copies) and the placeholders they may carry."""

    docs: tuple[PolicyDoc, ...]
    placeholders: tuple[tuple[str, str], ...] = ()  # (binding name, the placeholder string in the rendered form)
    # Reviewed in advance, deployed only by a later topology: what promoting each replica would deploy (the failover
    # `failover--<replica>--<document>`, from `s3tables_kit.policies.failover`). Rendered and looked up like the others;
    # never iterated with the deployed documents (the summary's layer tables describe what this topology deploys).
    candidates: tuple[PolicyDoc, ...] = ()
    # The failover topology (`[failover] promoted_bucket`) deploys the configured promotion's candidates:
    # (name the stacks look up, candidate deployed under it). Lookups resolve through it, so the stacks of both
    # topologies read the one set by the same names. Empty for the normal topology.
    deploys: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        names = [d.name for d in self.all()]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"two policy documents of this topology share a name: {dupes}")

    def __iter__(self) -> Iterator[PolicyDoc]:
        return iter(self.docs)

    def __len__(self) -> int:
        return len(self.docs)

    def all(self) -> tuple[PolicyDoc, ...]:
        """The deployed documents and the candidates: everything `s3tables_kit.policies.render` writes."""
        return self.docs + self.candidates

    def names(self) -> list[str]:
        return [d.name for d in self.all()]

    def _deployed_name(self, purpose: str, site: str | None) -> str:
        name = purpose if site is None else f"{purpose}{SITE_SEPARATOR}{site}"
        return dict(self.deploys).get(name, name)

    def entry(self, purpose: str, site: str | None = None) -> PolicyDoc:
        """The document this topology deploys under that name (with kind, account and what it is attached to);
        KeyError names what exists."""
        name = self._deployed_name(purpose, site)
        for d in self.all():
            if d.name == name:
                return d
        raise KeyError(f"this topology has no policy document {name!r} (it has: {', '.join(self.names())})")

    def has(self, purpose: str, site: str | None = None) -> bool:
        name = self._deployed_name(purpose, site)
        return any(d.name == name for d in self.all())

    def document(self, purpose: str, site: str | None = None, **bindings: str) -> Document:
        """A copy of the document, with each named placeholder replaced by its deployed value (e.g. a Terraform
        reference). Binding a placeholder the document does not carry is an error, so a binding never silently
        stops applying."""
        doc = copy.deepcopy(self.entry(purpose, site).document)
        if not bindings:
            return doc
        known = dict(self.placeholders)
        values: dict[str, str] = {}
        for key, value in bindings.items():
            if key not in known:
                raise KeyError(f"unknown placeholder binding {key!r} (known: {sorted(known)})")
            if not _contains(doc, known[key]):
                raise ValueError(f"{purpose}: the document does not carry the placeholder {known[key]!r} ({key})")
            values[known[key]] = value
        return _substitute(doc, values)

    def for_source(self, cfg: KitConfig, src: Source) -> DocumentSet:
        """The set as one source's stack reads it: in an estate, each per-source document
        (`<purpose>--<stack id>`, `s3tables_kit.policies.documents.estate_source_name`) under the name `[source]` uses,
        so the source constructs look their documents up the same way in both forms."""
        name = scheme_of(cfg).source_document_name
        renames = tuple(
            (d.name, name(d.name, src.stack_id))
            for d in source_documents(cfg, src)
            if name(d.name, src.stack_id) != d.name
        )
        return replace(self, deploys=self.deploys + renames)

    def parts(self, purpose: str, site: str) -> list[Document]:
        """Every part of a managed policy split under its quota (`s3tables_kit.policies.parts`), part 1 first;
        empty when the topology has no such document."""
        out: list[Document] = []
        # a promotion that deploys the first part deploys them all: no part of the normal topology's joins them
        moved = self._deployed_name(purpose, site) != f"{purpose}{SITE_SEPARATOR}{site}"
        while self.has(name := part_name(purpose, len(out) + 1), site):
            if moved and self._deployed_name(name, site) == f"{name}{SITE_SEPARATOR}{site}":
                break
            out.append(self.document(name, site))
        return out

    def optional(self, purpose: str, site: str | None = None) -> Document | None:
        """The document if the topology has it (e.g. a key policy only where the kit creates the key)."""
        return self.document(purpose, site) if self.has(purpose, site) else None


def build(cfg: KitConfig) -> DocumentSet:
    """Every document of the topology `cfg`, once. Names are unique (they are file names under rendered/)."""
    candidates: list[PolicyDoc] = []
    deploys: list[tuple[str, str]] = []
    promoted = cfg.kind.promoted_bucket
    if cfg.failover is not None:  # failover candidates: what promoting each replica would deploy, reviewed in advance
        for r in cfg.replicas:
            docs = failover_candidates(cfg, r)
            candidates += docs
            if r.bucket == promoted:  # the failover topology: its stacks deploy these
                deploys += [(d.deploys_as, d.name) for d in docs if d.deploys_as]
        candidates += freeze_policy_docs(cfg)  # the planned failover's freeze, put by the tool only
    return DocumentSet(
        tuple(build_documents(cfg)),
        placeholders=(("emr_application_arn", emr_application_arn(cfg)),),
        candidates=tuple(candidates),
        deploys=tuple(deploys),
    )


def failover_candidates(cfg: KitConfig, replica: Replica) -> list[PolicyDoc]:
    """What promoting `replica` would deploy (`s3tables_kit.policies.failover`), among the destinations of the one
    source feeding it; a fan-in replica is restored from, never promoted (the configuration refuses it), so it has none;
    and the candidates keep to that source's sites: no document that serves every source of an estate
    (`SchemeDocuments.kept_by_promotion`), no document of a replica another source also feeds, no guardrail of an
    account holding one (those stay the estate's)."""
    feeding = cfg.sources_into(replica)
    if len(feeding) != 1:
        return []
    destinations = cfg.destinations_of(feeding[0])
    shared = [r for r in cfg.replicas if r not in destinations or len(cfg.sources_into(r)) > 1]
    shared_sites = {r.bucket for r in shared} | {r.account_id for r in shared}
    kept = scheme_of(cfg).kept_by_promotion

    def own(d: PolicyDoc) -> bool:
        name = d.deploys_as or d.name
        return name not in kept and name.rsplit(SITE_SEPARATOR, 1)[-1] not in shared_sites

    return [d for d in failover_policy_docs(cfg, replica.bucket) if own(d)]


def build_monitor(cfg: KitConfig) -> DocumentSet:
    """The replication monitor's documents of `cfg` alone: the failover topology's monitor is built from the
    configuration of the promoted source and its destinations
    (`s3tables_kit.infra.stacks.failover.failover_monitor_config`), which has no recovery site of its own (its rehearsal
    stays in the recovery stack), so its whole set is not a topology to build."""
    from s3tables_kit.policies import assurance

    no_rehearsal = cfg.model_copy(
        update={
            "assurance": cfg.assurance.model_copy(
                update={"rehearsal": cfg.assurance.rehearsal.model_copy(update={"enabled": False})}
            )
        }
    )
    (src,) = cfg.sources  # the promoted bucket
    return DocumentSet(tuple(assurance.documents(no_rehearsal, src)))
