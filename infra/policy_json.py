"""Policy documents as the synthesized Terraform carries them: JSON whose IAM policy variables are escaped.

Terraform reads `${...}` in any string of a configuration as an interpolation, so an IAM policy variable such as
`${aws:PrincipalAccount}` (the fan-in confinement's) fails `terraform validate` unless written `$${...}`, which reaches
AWS as `${...}`. A policy variable always names a key with a colon (`${aws:...}`, `${s3tables:...}`) or is one of
`${*}`, `${?}`, `${$}`; a Terraform reference the constructs bind on purpose (`${aws_emrserverless_application...}`)
never does, and stays an interpolation. Every construct that passes a policy to Terraform goes through `policy_json`
(or `compact_policy_json`), and whatever reads one back from the synthesized configuration through `policy_from_json`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from s3tables_kit.policies.documents import compact_json
from s3tables_kit.policies.model import Document

_POLICY_VARIABLE = re.compile(r"\$\{(?=[A-Za-z0-9-]+:|[*?$]\})")
_ESCAPED_VARIABLE = re.compile(r"\$\$\{(?=[A-Za-z0-9-]+:|[*?$]\})")


def escape_policy_variables(text: str) -> str:
    """`text` with every IAM policy variable written as Terraform's literal `$${...}`."""
    return _POLICY_VARIABLE.sub("$${", text)


def policy_json(document: Document | dict[str, Any]) -> str:
    """`document` as indented JSON (what the nag rules and reviewers read), escaped for Terraform."""
    return escape_policy_variables(json.dumps(document, indent=2))


def compact_policy_json(document: Document | dict[str, Any]) -> str:
    """`s3tables_kit.policies.documents.compact_json` (the Organizations policies' form: their size limit counts
    whitespace), escaped for Terraform."""
    return escape_policy_variables(compact_json(document))


def policy_from_json(value: str) -> Any:
    """The document a synthesized policy string stands for (what AWS receives)."""
    return json.loads(_ESCAPED_VARIABLE.sub("${", value))
