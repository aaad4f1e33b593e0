"""`make e2e`: the stacks applied by the real Terraform and provider to the local AWS stand-in (harness/e2e/run.py);
what the local provider cannot express is applied by the reviewed stand-ins of harness/e2e/standins.py."""
