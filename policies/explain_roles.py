"""What `explain` evaluates for assuming a role (`sts:AssumeRole*`): the role's trust policy, and the resource control
policies, the one layer that binds a caller outside the organization (SCPs bind only its own principals).

A role the kit makes is evaluated with the kit's trust document; any other role (one minted under the replication
name pattern, say) with a trust policy that names the caller, the worst case, stated as an assumption.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from s3tables_kit.policies.model import Document, PolicyDoc
from s3tables_kit.topology.config import KitConfig

STS_ACTIONS = frozenset({"AssumeRole", "AssumeRoleWithSAML", "AssumeRoleWithWebIdentity"})
ROLE_RESOURCE_RE = re.compile(r"^arn:aws(?:-cn|-us-gov)?:iam::(\d{12}):role/[\w+=,.@/-]+$")
ASSUMED_TRUST = "assumed:trust-names-the-caller"


def kit_trust(docs: Mapping[str, PolicyDoc], role_arn: str) -> PolicyDoc | None:
    """The trust document of the role, if the kit makes it (`s3tables_kit.policies.model.role_documents`)."""
    account, name = role_arn.split(":")[4], role_arn.rsplit("/", 1)[1]
    for d in docs.values():
        if d.kind == "trust" and d.account_id == account and d.attached_to == f"IAM role {name} (trust)":
            return d
    return None


def trust_naming(principal: str, action: str) -> Document:
    """A trust policy that lets the caller assume the role (what a minted role's author would write)."""
    who = {"Service": principal} if "." in principal and ":" not in principal else {"AWS": principal}
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": "AssumedTrustNamesTheCaller", "Effect": "Allow", "Principal": who, "Action": action}],
    }


def rcps_apply(cfg: KitConfig, resource_account: str) -> bool:
    """RCPs bind a request to a resource of an account under their targets, whoever makes it."""
    org = cfg.protection.organization
    return org is not None and resource_account in org.covered_accounts
