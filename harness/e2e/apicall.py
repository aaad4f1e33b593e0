"""The API stand-in's provisioner (`harness/e2e/standins.py`, rule 3): make each call of $KIT_E2E_CALLS with boto3
against $KIT_E2E_ENDPOINT as the account it names. Run by Terraform (`local-exec`), never by hand.

KIT_E2E_CALLS        JSON list of {"service", "region", "account", "operation", "arguments"}
KIT_E2E_ENDPOINT     the emulator's URL
KIT_E2E_CREDENTIALS  JSON {account: [access key id, secret access key]}
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    import boto3

    calls = json.loads(os.environ["KIT_E2E_CALLS"])
    endpoint = os.environ["KIT_E2E_ENDPOINT"]
    credentials = json.loads(os.environ["KIT_E2E_CREDENTIALS"])
    for call in calls:
        key_id, secret = credentials[call["account"]]
        client = boto3.session.Session(
            aws_access_key_id=key_id, aws_secret_access_key=secret, region_name=call["region"]
        ).client(call["service"], endpoint_url=endpoint)
        getattr(client, call["operation"])(**call["arguments"])
        print(f"e2e stand-in: {call['service']}.{call['operation']} in {call['account']}/{call['region']}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
