"""The backup vault's jobs: the incremental backup of a replica into the vault and what a restore reads back
(docs/decisions/0034-backup-vault.md). `layout` is the contract both sides share: keys, the point manifest, selection.
"""
