"""`make live-verify` (docs/provisioning.md, "Verify on your own account before you rely on it")."""
