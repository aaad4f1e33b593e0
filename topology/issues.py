"""A problem of the configuration (`Issue`: the field and the rule it breaks) and the rules shared by the cross-field
checks of `s3tables_kit.topology.checks` and `s3tables_kit.topology.checks_failover`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from s3tables_kit.topology.rules import MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION


class KitRefusal(ValueError):
    """Input the kit refuses (a configuration, an adopter's statement): its message is a head line and one line per
    problem, which every entry point prints as it is, exit 2, never a traceback."""


@dataclass(frozen=True)
class Issue:
    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


def bucket_quota_issues(where: str, sites: list[tuple[str, str]]) -> list[Issue]:
    """One issue per (account, Region) holding more table buckets than the quota allows."""
    return [
        Issue(where, f"{n} table buckets in {acct}/{region} exceed the quota of {MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION}")
        for (acct, region), n in Counter(sites).items()
        if n > MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION
    ]
