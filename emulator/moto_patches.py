"""Patches to moto 5.2.5 where it differs from AWS in a way the kit or the provider notices."""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any

# ----------------------------------------------------------------------------------------------------
# moto patches: UUID table ARNs
# ----------------------------------------------------------------------------------------------------

_PATCHED = False


def patch_moto() -> None:
    """Table ARNs end in a UUID as on AWS (docs/aws-facts.md#iam-for-s3-tables), so name-based shortcuts in the kit
    would fail here."""
    global _PATCHED
    if _PATCHED:
        return
    from moto.s3tables import models

    orig_init = models.Table.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self.table_id = str(uuid.uuid4())
        orig_init(self, *args, **kwargs)

    models.Table.__init__ = __init__  # type: ignore[method-assign]
    models.Table.arn = property(lambda self: f"{self.table_bucket_arn}/table/{self.table_id}")  # type: ignore[method-assign,assignment]

    # moto answers UpdateTableMetadataLocation with `"namespace": "<name>"`; the API has a list of strings, and the
    # AWS SDK v2 in the S3 Tables catalog jar fails to parse the string (its commits then fail;
    # docs/aws-facts.md#local-stand-ins).
    from moto.s3tables import responses

    original = responses.S3TablesResponse.update_table_metadata_location

    def update_table_metadata_location(self: Any) -> Any:
        status, headers, body = original(self)
        doc = json.loads(body)
        if isinstance(doc.get("namespace"), str):
            doc["namespace"] = [doc["namespace"]]
        return status, headers, json.dumps(doc)

    responses.S3TablesResponse.update_table_metadata_location = update_table_metadata_location  # type: ignore[method-assign]

    # A bucket policy is decided in front of moto, with the caller's identity, for a known principal's request
    # (emulator.bucket_policy); moto's reading (no principal, no request context) stays for the others.
    from moto.iam.access_control import PermissionResult
    from moto.s3.models import FakeBucket

    from emulator import bucket_policy

    original_permission = FakeBucket.get_permission

    def get_permission(self: Any, action: str, resource: str) -> Any:
        return (
            original_permission(self, action, resource)
            if bucket_policy.moto_reads_policy()
            else (PermissionResult.NEUTRAL)
        )

    FakeBucket.get_permission = get_permission  # type: ignore[method-assign]

    # moto leaves `modifiedAt` at the creation time; S3 Tables sets it on every commit (docs/aws-facts.md, U29)
    original_update = models.Table.update_metadata_location

    def update_metadata_location(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original_update(self, *args, **kwargs)
        self.was_modified(by=self.account_id)
        return out

    models.Table.update_metadata_location = update_metadata_location  # type: ignore[method-assign]

    # moto's EMR Serverless keeps neither an application's image nor its runtime configuration (what `audit` compares
    # with the deployed application, jobs/ops/audit_deployed.py): UpdateApplication keeps both, GetApplication answers.
    from moto.emrserverless import responses as emr_responses

    original_update_app = emr_responses.EMRServerlessResponse.update_application

    def update_application(self: Any) -> Any:
        result = original_update_app(self)
        app = self.emrserverless_backend.get_application(application_id=self._get_param("applicationId"))
        for param, attr in (
            ("imageConfiguration", "image_configuration"),
            ("runtimeConfiguration", "runtime_configuration"),
        ):
            if self._get_param(param) is not None:
                setattr(app, attr, self._get_param(param))
        return result

    emr_responses.EMRServerlessResponse.update_application = update_application  # type: ignore[method-assign]

    # moto's server lists its own package directory (one stat per service, ~180) on EVERY request to route it
    # (`werkzeug_app.get_backend_for_host`); the package does not change while the server runs, so list it once.
    # Pure speed (half of moto's CPU per request on a simple operation): the same answer, computed once.
    from moto import backends

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules

    # EMR Serverless takes the application type in any case (the provider's examples and the kit write "spark"; AWS
    # answers "Spark"); moto 5.2.5 refuses anything but upper case ("Unsupported engine spark"). It stores the
    # type capitalized, as AWS reports it, so only the check's input is normalised. A new application is CREATED on
    # AWS (it starts with its first job when auto-start is on); moto makes it STARTED, and the provider waits for
    # CREATED until it fails.
    from moto.emrserverless import models as emr

    create_application = emr.EMRServerlessBackend.create_application

    def create_application_any_case(self: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(kwargs.get("application_type"), str):
            kwargs["application_type"] = kwargs["application_type"].upper()
        application = create_application(self, *args, **kwargs)
        application.state = "CREATED"
        # AWS reports the architecture (default X86_64; the provider reads it back); moto keeps none. The kit never
        # sets it, so the emulator reports AWS's default (an explicit ARM64 is not kept).
        application.architecture = "X86_64"  # type: ignore[attr-defined]
        return application

    emr.EMRServerlessBackend.create_application = create_application_any_case  # type: ignore[method-assign]

    # Lambda: moto 5.2.5 drops a function's LoggingConfig (CreateFunction, UpdateFunctionConfiguration) and never
    # reports it in GetFunction; AWS keeps it and reports it, with the defaults (Text, /aws/lambda/<name>) when unset.
    # The provider reads it back after apply: without it every plan wants to set it again.
    from moto.awslambda import models as awslambda

    fn_init = awslambda.LambdaFunction.__init__
    fn_config = awslambda.LambdaFunction.get_configuration
    fn_update = awslambda.LambdaFunction.update_configuration

    def _logging(name: str, given: dict[str, Any] | None) -> dict[str, Any]:
        return {"LogFormat": "Text", "LogGroup": f"/aws/lambda/{name}", **(given or {})}

    def init_with_logging(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        fn_init(self, account_id, spec, *args, **kwargs)
        self.kit_logging_config = _logging(self.function_name, spec.get("LoggingConfig"))

    def config_with_logging(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = fn_config(self, *args, **kwargs)
        out["LoggingConfig"] = getattr(self, "kit_logging_config", _logging(self.function_name, None))
        return out

    def update_with_logging(self: Any, config_updates: dict[str, Any]) -> dict[str, Any]:
        if "LoggingConfig" in config_updates:
            self.kit_logging_config = _logging(self.function_name, config_updates["LoggingConfig"])
        return fn_update(self, config_updates)

    awslambda.LambdaFunction.__init__ = init_with_logging  # type: ignore[method-assign]
    awslambda.LambdaFunction.get_configuration = config_with_logging  # type: ignore[method-assign]
    awslambda.LambdaFunction.update_configuration = update_with_logging  # type: ignore[method-assign]
    _patch_create_bucket_tags()
    _patch_object_lock_retention()
    _PATCHED = True


def _create_bucket_tags(body: bytes | str | None) -> dict[str, str]:
    """The tags of a CreateBucket request (`CreateBucketConfiguration/Tags/Tag`, S3 API since 2025)."""
    import xmltodict

    if not body:
        return {}
    try:
        conf = xmltodict.parse(body).get("CreateBucketConfiguration") or {}
    except Exception:  # not XML: moto answers the request as it would without tags
        return {}
    tags = (conf.get("Tags") or {}).get("Tag") or []
    return {str(t["Key"]): str(t.get("Value") or "") for t in (tags if isinstance(tags, list) else [tags])}


def _patch_create_bucket_tags() -> None:
    """moto 5.2.5 ignores the tags of a CreateBucket request; AWS applies them. hashicorp/aws 6.x creates an
    `aws_s3_bucket` with its tags (default tags included) in that request and reads them back through S3 Control:
    without this, every plan after apply wants to add them again."""
    from moto.s3 import responses as s3responses

    bucket_put = s3responses.S3Response._bucket_response_put

    def put_with_tags(self: Any, request: Any, bucket_name: str, querystring: dict[str, Any]) -> Any:
        out = bucket_put(self, request, bucket_name, querystring)
        tags = {} if querystring else _create_bucket_tags(self.body)
        if tags:
            self.backend.put_bucket_tagging(bucket_name, tags)
        return out

    s3responses.S3Response._bucket_response_put = put_with_tags  # type: ignore[method-assign]


def _retain_until(value: str | None) -> datetime.datetime | None:
    """An Object Lock retain-until date as S3 writes it (`2026-12-01T00:00:00Z`, with or without fractions)."""
    if not value:
        return None
    parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def weakens_lock(
    current: tuple[str | None, str | None], wanted: tuple[str | None, str | None], *, bypass: bool
) -> bool:
    """Whether a PutObjectRetention of `wanted` (mode, retain-until) weakens the lock `current` still in force: S3
    refuses, in COMPLIANCE mode, any mode change and any earlier date, to everyone; in GOVERNANCE mode the same
    without `x-amz-bypass-governance-retention` (S3 user guide, "Object Lock retention modes")."""
    mode, until = current
    held = _retain_until(until)
    if mode not in ("GOVERNANCE", "COMPLIANCE") or held is None or held <= datetime.datetime.now(datetime.UTC):
        return False
    if mode == "GOVERNANCE" and bypass:
        return False
    new_until = _retain_until(wanted[1])
    return wanted[0] != mode or new_until is None or new_until < held


def _patch_object_lock_retention() -> None:
    """moto 5.2.5 refuses deleting a locked version but takes any PutObjectRetention, so a COMPLIANCE retention could
    be shortened or turned into GOVERNANCE here while AWS refuses it with AccessDenied: the backup vault rests on
    that refusal (docs/decisions/0034-backup-vault.md). It also lacks GetObjectRetention, which reads it back."""
    from moto.s3 import responses as s3responses
    from moto.s3.exceptions import AccessDeniedByLock, S3ClientError

    put_retention = s3responses.S3Response.put_object_retention

    def put_object_retention(self: Any) -> Any:
        key = self.backend.get_object(self.bucket_name, self.parse_key_name(), version_id=self._get_param("versionId"))
        bypass = self.headers.get("x-amz-bypass-governance-retention", "").lower() == "true"
        if key is not None and weakens_lock(
            (key.lock_mode, key.lock_until), self._mode_until_from_body(), bypass=bypass
        ):
            raise AccessDeniedByLock
        return put_retention(self)

    s3responses.S3Response.put_object_retention = put_object_retention  # type: ignore[method-assign]

    # moto 5.2.5 has no GetObjectRetention (`GET /<key>?retention` fails with a 500); S3 answers the version's lock,
    # or NoSuchObjectLockConfiguration when it has none.
    key_get = s3responses.S3Response._key_response_get

    def key_get_with_retention(self: Any, query: dict[str, Any], key_name: str) -> Any:
        if "retention" not in query:
            return key_get(self, query, key_name)
        self._set_action("KEY", "GET", query)
        self._authenticate_and_authorize_s3_action(bucket_name=self.bucket_name, key_name=key_name)
        key, _ = self._get_key()
        if not key.lock_mode or not key.lock_until:
            raise S3ClientError(
                "NoSuchObjectLockConfiguration", "The specified object does not have a ObjectLock configuration"
            )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?><Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Mode>{key.lock_mode}</Mode><RetainUntilDate>{key.lock_until}</RetainUntilDate></Retention>"
        )
        headers = {"content-type": "application/xml"}
        if key.version_id != "null":
            headers["x-amz-version-id"] = key.version_id
        return 200, headers, body

    s3responses.S3Response._key_response_get = key_get_with_retention  # type: ignore[method-assign]
