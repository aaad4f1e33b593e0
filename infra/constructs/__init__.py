"""One construct per concern; the kit's stacks (`infra/stacks/`) compose them.

Public: the constructs `s3tables_kit.infra.library` re-exports (`TableBucket`, `SourceCatalog`, `ReplicationRole`,
`ReplicationConfiguration`, `ReplicaBucketPolicy`, `ReplicaGuardrail`, `ReplicaScp`, `configure_state`), each in its
module's `__all__`. A name with a leading underscore is private to its module; any other name here is shared by the
kit's own stacks and constructs and is not part of the public API (it may change without notice). Construct ids are
Terraform addresses: renaming a Python name never changes one.
"""

from s3tables_kit.infra.bindings import load_provider_lazily

load_provider_lazily()  # before any module here imports a provider resource: see infra/bindings.py
