"""A table bucket with every security-relevant setting explicit: encryption (SSE-S3 or KMS, with the key created here
when asked), storage class (updatable: PutTableBucketStorageClass, applies to tables created afterwards),
unreferenced-file removal, tags, and `prevent_destroy`.

An adopted bucket (`adopt = true`) is imported, never created. A source keeps its tags (awscc's `tags` is the whole
set, so the kit's would remove the adopter's; a replica takes the kit's, its protection tag among them) and the
storage class and unreferenced-file removal kit.toml does not state (`s3tables_kit.topology.adoption.states`); its
stated encryption is set, so a plan shows any difference.

In an estate (`[[sources]]`) every protected (replica) table bucket also carries the protection tag
`kit-protection = <kit name>`, on the bucket resource itself (awscc has no provider default tags): the estate's SCPs
match protected buckets by it. Never on source or recovery buckets, never on tables; `[source]` configurations set
no protection tag."""

from __future__ import annotations

from cdktf import TerraformProvider, TerraformProviderGeneratorMetadata, TerraformResource, TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from constructs import Construct

from s3tables_kit.infra.constructs.providers import site_providers
from s3tables_kit.infra.lifecycle import adopt
from s3tables_kit.infra.policy_json import policy_json
from s3tables_kit.policies import documents
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.documents import Document
from s3tables_kit.topology.adoption import states
from s3tables_kit.topology.config import Encryption, KitConfig, Replica, Source, UnreferencedFileRemoval
from s3tables_kit.topology.outputs import encryption_value

__all__ = ["TableBucket"]


class TableBucket(Construct):
    """An S3 table bucket (awscc) with encryption, storage class, unreferenced-file removal and tags explicit.

    - `name`: the table bucket's name.
    - `encryption`: SSE-S3, an existing KMS key, or a key created here (`Encryption.creates_key`).
    - `storage_class`: `STANDARD` or `INTELLIGENT_TIERING` (applies to tables created afterwards); None: not set
      (an adopted bucket keeps its own).
    - `unreferenced_file_removal`: days after which unreferenced and noncurrent files go; None: not set.
    - `awscc`: the stack's awscc provider (`site_providers`).
    - `kms_alias`: the alias of a key created here.
    - `kms_key_policy`: the policy of a key created here (default None; required when the key is created here).
    - `allow_destroy`: synthesize `prevent_destroy = false` (default False).
    - `tags`: the bucket's tags (default None: none; awscc has no provider default tags).
    - `replica_key_tag`: the tag a replica's created key carries, which the SCP and the guardrail match replica keys
      by (default None: not a replica).
    - `import_arn`: the ARN of an existing bucket to import instead of creating one (default None: created here).

    Attributes: `arn`, `name`, `kms_key_arn` (None for SSE-S3), `encryption_output`, `resource` (the awscc resource).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        encryption: Encryption,
        storage_class: str | None,
        unreferenced_file_removal: UnreferencedFileRemoval | None,
        awscc: TerraformProvider,
        kms_alias: str,
        kms_key_policy: Document | None = None,
        allow_destroy: bool = False,
        tags: dict[str, str] | None = None,
        replica_key_tag: dict[str, str] | None = None,
        import_arn: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.name = name
        self.sse_algorithm = encryption.sse_algorithm
        self.kms_key_arn: str | None = None
        if encryption.creates_key:
            if kms_key_policy is None:
                raise ValueError(f"table bucket {name}: a created KMS key needs its key policy")
            key = KmsKey(
                self,
                "kms-key",
                description=f"S3 Tables bucket {name}",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                policy=policy_json(kms_key_policy),
                # A replica key's policy denies kms:PutKeyPolicy to everyone but break-glass, the deploy role
                # included (it could otherwise grant itself the key's deletion). KMS's lockout check would refuse
                # that policy from the creating role, so the check is bypassed deliberately, for replica keys only.
                bypass_policy_lockout_safety_check=True if replica_key_tag else None,
                # The tag the SCP and the guardrail match replica keys by (their ARN is unknown at synth).
                tags=replica_key_tag,
            )
            KmsAlias(self, "kms-alias", name=kms_alias, target_key_id=key.key_id)
            self.kms_key_arn = key.arn
        elif encryption.type == "kms":
            self.kms_key_arn = encryption.kms_key

        enc: dict[str, object] = {"sse_algorithm": encryption.sse_algorithm}
        if self.kms_key_arn:
            enc["kms_key_arn"] = self.kms_key_arn
        self.resource = TerraformResource(
            self,
            "bucket",
            terraform_resource_type="awscc_s3tables_table_bucket",
            terraform_generator_metadata=TerraformProviderGeneratorMetadata(provider_name="awscc"),
            provider=awscc,
            lifecycle=TerraformResourceLifecycle(prevent_destroy=not allow_destroy),
        )
        if import_arn is not None:
            adopt(self.resource, import_arn)
        self.resource.add_override("table_bucket_name", name)
        self.resource.add_override("encryption_configuration", enc)
        if storage_class is not None:
            self.resource.add_override("storage_class_configuration", {"storage_class": storage_class})
        # awscc has no provider default_tags: the bucket carries the configured + kit tags itself (a list of key/value).
        if tags:
            self.resource.add_override("tags", [{"key": k, "value": v} for k, v in sorted(tags.items())])
        if unreferenced_file_removal is not None:
            self.resource.add_override(
                "unreferenced_file_removal",
                {
                    "status": "Enabled",
                    "unreferenced_days": unreferenced_file_removal.unreferenced_days,
                    "noncurrent_days": unreferenced_file_removal.noncurrent_days,
                },
            )

    @property
    def arn(self) -> str:
        """The bucket's ARN (a reference: known at apply)."""
        return self.resource.get_string_attribute("table_bucket_arn")

    @property
    def encryption_output(self) -> dict[str, object]:
        """The `encryption` member of the kit outputs."""
        return encryption_value(self.sse_algorithm, self.kms_key_arn)


def bucket_tags(cfg: KitConfig, role: str) -> dict[str, str]:
    """The tags of a kit table bucket (`role`: source, replica or recovery): the configured and kit tags, plus the
    protection tags of the scheme on a replica (an estate's `PROTECTION_TAG_KEY`)."""
    if role == "replica":
        return dict(sorted({**cfg.resource_tags, **dict.fromkeys(cfg.scheme.protection_tags, cfg.kit.name)}.items()))
    return cfg.resource_tags


def kit_table_bucket(
    scope: Construct,
    cfg: KitConfig,
    docs: DocumentSet,
    *,
    role: str,
    name: str,
    encryption: Encryption,
    storage_class: str | None,
    unreferenced_file_removal: UnreferencedFileRemoval | None,
    awscc: TerraformProvider,
    allow_destroy: bool,
    import_arn: str | None = None,
) -> TableBucket:
    """The `table-bucket` construct of a kit stack (`role`: source, replica or recovery), with the key policy of
    the topology's document set when the kit creates the bucket's KMS key."""
    return TableBucket(
        scope,
        "table-bucket",
        name=name,
        encryption=encryption,
        storage_class=storage_class,
        unreferenced_file_removal=unreferenced_file_removal,
        awscc=awscc,
        kms_alias=documents.kms_alias(cfg, name),
        kms_key_policy=docs.optional("kms-key-policy", name),
        allow_destroy=allow_destroy,
        # An imported source keeps its own tags; an imported replica carries the kit's (its protection tag).
        tags=None if import_arn and role != "replica" else bucket_tags(cfg, role),
        replica_key_tag=documents.replica_key_tags(cfg) if role == "replica" else None,
        import_arn=import_arn,
    )


def site_table_bucket(
    scope: Construct,
    cfg: KitConfig,
    docs: DocumentSet,
    *,
    role: str,
    site: Source | Replica,
    allow_destroy: bool,
) -> TableBucket:
    """The providers of a site's stack (`site_providers`) and the site's own table bucket, with the bucket settings
    its configuration section names (the source's or a replica's); an adopted one is imported, with the settings
    kit.toml states."""
    adopted = site.adopt
    return kit_table_bucket(
        scope,
        cfg,
        docs,
        role=role,
        name=site.bucket,
        encryption=site.encryption,
        storage_class=site.storage_class if _states(site, "storage_class") else None,
        unreferenced_file_removal=site.unreferenced_file_removal
        if _states(site, "unreferenced_file_removal")
        else None,
        awscc=site_providers(scope, cfg, site),
        allow_destroy=allow_destroy,
        import_arn=site.bucket_arn if adopted else None,
    )


def _states(site: Source | Replica, key: str) -> bool:
    return states(site, key) if isinstance(site, Source) else not site.adopt or key in site.model_fields_set
