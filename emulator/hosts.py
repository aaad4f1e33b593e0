"""Requests whose host, not their path, says where they go: S3 Control's account-prefixed host form, and requests sent
to the emulator as an HTTP proxy.

The AWS SDK for Go v2 sends every S3 Control call to `<account>.<endpoint host>` (`<account>.s3-control.<region>.
amazonaws.com` on AWS; `<account>.127.0.0.1:<port>` with a custom endpoint). hashicorp/aws 6.x reads and writes a
general purpose bucket's tags that way (`ListTagsForResource`, `TagResource`, `UntagResource` on
`/v20180820/tags/<bucket ARN>`). A name like `<account>.127.0.0.1` resolves nowhere, so `make e2e` runs Terraform
with the emulator as its HTTP proxy for such hosts (loopback addresses are never proxied): the request then arrives
in absolute form (`GET http://<account>.127.0.0.1:<port>/v20180820/...`). moto routes S3 Control by host, and would
take a request signed for `s3` at a loopback host for S3 itself, so the host is rewritten to AWS's form, with the
account from `x-amz-account-id` (every S3 Control request carries it) or the host's prefix.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

S3CONTROL_PREFIX = "/v20180820/"
_REGION_RE = re.compile(r"Credential=[^/]+/\d+/([^/]+)/s3/aws4_request")
_ACCOUNT_HOST_RE = re.compile(r"^([0-9]{12})\.")


def origin_form(environ: dict[str, Any]) -> str:
    """The request URI without a proxy request's `scheme://host` (the host is in HTTP_HOST), written back to the
    environ for whoever reads the raw URI next."""
    raw_uri = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", ""))
    if raw_uri.startswith("/"):  # origin form already: the usual request, nothing to split
        return raw_uri
    parts = urlsplit(raw_uri)
    if not (parts.scheme and parts.netloc):
        return raw_uri
    environ["HTTP_HOST"] = parts.netloc
    stripped = parts.path + (f"?{parts.query}" if parts.query else "")
    environ["RAW_URI"] = environ["REQUEST_URI"] = stripped
    return stripped


def s3control_host(environ: dict[str, Any], raw_path: str) -> str | None:
    """AWS's S3 Control host for an S3 Control request (None: not one, or no account to name)."""
    if not raw_path.startswith(S3CONTROL_PREFIX):
        return None
    m = _REGION_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if m is None:
        return None
    account = environ.get("HTTP_X_AMZ_ACCOUNT_ID")
    if not account:
        prefix = _ACCOUNT_HOST_RE.match(environ.get("HTTP_HOST", ""))
        account = prefix.group(1) if prefix else None
    if not account:
        return None
    return f"{account}.s3-control.{m.group(1)}.amazonaws.com"
