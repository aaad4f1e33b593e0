"""`PutRows` and `GetChannel`: a table's default channel buffers accepted rows and the service commits them itself,
later (docs/aws-facts.md#streaming-writes-putrows).

* `PutRows` (JSON payload: one object per line) validates every row against the table's current Iceberg schema and
  buffers the rows (all or none); the answer is `acceptedRows`. Only the `default` channel exists.
* The commit is the service's: `commitDelayS` after the first row buffered (`/_kit_test/putrows`, default 0.2 s;
  `flush` commits at once) the buffered rows become one real Iceberg append to the table (a Parquet data file, a
  manifest, a manifest list, a metadata file written through pyiceberg into the table's storage, the metadata location
  swapped as `UpdateTableMetadataLocation` does), so the replication simulation then carries it (`replicate`: the
  service replicates each such commit at once, as `/_kit_test/replicate` would).
* `GetChannel` answers NotFoundException before the table's first `PutRows`, else `state` and
  `approximateNumberOfBufferedRows`; `readsZero` has it report 0 while rows are still buffered, as AWS warns it can.
* Whether a Deny added after acceptance stops the deferred commit is not documented (fact `U30`): by default the commit
  is the service's own and no table bucket or table policy is evaluated for it; the switch `putrows-commit-denied`
  (`emulator.live`) evaluates them for the commit (an unknown principal, as for a service): a freeze's Deny then keeps
  the rows buffered and the channel `failing` until the Deny goes, the commit retried every `commitDelayS`.
"""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass, field
from typing import Any, cast

from emulator import live, resource_policy
from emulator.lookup import _s3_backend, get_table_by_arn
from emulator.routing import RAW_BODY, handles
from emulator.state import LOCK, STATE, bad_request, not_found

DEFAULT_CHANNEL = "default"
DEFAULT_DELAY_S = 0.2


@dataclass
class ChannelBuffer:
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: tuple[str, str] | None = None  # (errorCode, errorMessage) of the last refused commit
    timer: Any = None
    committed: int = 0  # rows committed so far (what a test reads)


def control(body: dict[str, Any]) -> dict[str, Any]:
    """`/_kit_test/putrows`: {"commitDelayS", "replicate", "readsZero"} settings, {"flush": true} commits every buffered
    channel now; answers each channel's buffered and committed rows."""
    for key in ("commitDelayS", "replicate", "readsZero"):
        if key in body:
            STATE.streaming[key] = body[key]
    if body.get("flush"):
        for arn, ch in list(STATE.channels.items()):
            _commit(arn)
            if ch.rows:  # refused: the service tries again `commitDelayS` from now
                if ch.timer is not None:
                    ch.timer.cancel()
                    ch.timer = None
                _arm(arn, ch)
    return {arn: {"buffered": len(c.rows), "committed": c.committed} for arn, c in STATE.channels.items()}


def _channel_id(q: dict[str, str]) -> None:
    if (q.get("channelId") or DEFAULT_CHANNEL) != DEFAULT_CHANNEL:
        raise bad_request("Only the default channel is supported.")  # documented behaviour, our wording


@handles("PutRows")
def put_rows(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    _channel_id(q)
    t = get_table_by_arn(q.get("tableArn", ""))
    if (q.get("payloadFormat") or "JSON") != "JSON":
        raise bad_request("The stand-in accepts the JSON payload format only.")  # ours: AVRO is not modelled
    columns = _columns(t)
    if columns is None:
        raise bad_request("The table has no schema.")  # documented: a table without a schema fails; our wording
    rows = []
    for n, line in enumerate(bytes(b.get(RAW_BODY) or b"").decode().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or set(row) - columns:
            raise bad_request(f"Row {n} does not match the table's schema.")  # our wording
        rows.append(row)
    if not rows:
        raise bad_request("The payload holds no row.")  # our wording
    ch = STATE.channels.setdefault(t.arn, ChannelBuffer())
    ch.rows += rows
    _arm(t.arn, ch)
    return 200, {"acceptedRows": len(rows)}


@handles("GetChannel")
def get_channel(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    _channel_id(q)
    t = get_table_by_arn(q.get("tableArn", ""))
    ch = STATE.channels.get(t.arn)
    if ch is None:
        raise not_found("The channel does not exist.")  # documented: NotFoundException before the first PutRows
    shown = 0 if STATE.streaming.get("readsZero") else len(ch.rows)
    out: dict[str, Any] = {"state": "failing" if ch.error else "active", "approximateNumberOfBufferedRows": shown}
    if ch.error:
        out["errorCode"], out["errorMessage"] = ch.error
    return 200, out


def _columns(t: Any) -> set[str] | None:
    doc = _metadata(t)
    if doc is None:
        return None
    schema = next(s for s in doc["schemas"] if s["schema-id"] == doc.get("current-schema-id", 0))
    return {str(f["name"]) for f in schema["fields"]}


def _metadata(t: Any) -> dict[str, Any] | None:
    if not t.metadata_location:
        return None
    key = t.metadata_location.removeprefix(t.warehouse_location + "/")
    obj = _s3_backend(t.account_id, t.partition).get_object(t.warehouse_location.removeprefix("s3://"), key)
    return cast("dict[str, Any]", json.loads(obj.value))


def _arm(arn: str, ch: ChannelBuffer) -> None:
    """The service's next commit of this channel, `commitDelayS` from now (one pending at a time)."""
    if ch.timer is not None:
        return
    ch.timer = threading.Timer(float(STATE.streaming.get("commitDelayS", DEFAULT_DELAY_S)), _on_timer, (arn, ch))
    ch.timer.daemon = True
    ch.timer.start()


def _on_timer(arn: str, ch: ChannelBuffer) -> None:
    with LOCK:
        if STATE.channels.get(arn) is not ch:  # the emulator was reset meanwhile
            return
        ch.timer = None
        _commit(arn)
        if ch.rows:  # refused: tried again later, as the service retries
            _arm(arn, ch)


def _commit(arn: str) -> None:
    """The service's commit of everything buffered on `arn`'s channel (called with the lock held)."""
    ch = STATE.channels[arn]
    if not ch.rows:
        return
    t = get_table_by_arn(arn)
    if "putrows-commit-denied" in live.LIVE.switches:
        texts = [x for x in (STATE.bucket_policies.get(t.table_bucket_arn), STATE.table_policies.get(arn)) if x]
        why = resource_policy.check("UpdateTableMetadataLocation", arn, t.table_bucket_arn, texts, {}, always=True)
        if why is not None:
            ch.error = ("AccessDenied", why)  # our code: the documented ChannelErrorCode values were not readable
            return
    rows, ch.rows, ch.error = ch.rows, [], None
    _append(t, rows)
    ch.committed += len(rows)
    if STATE.streaming.get("replicate"):
        live._app()._replicate({"sourceTableArn": arn})  # the replication service, through what emulator.app binds


def _append(t: Any, rows: list[dict[str, Any]]) -> None:
    """One Iceberg append of `rows` through pyiceberg, its files written straight into the table's storage."""
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadataUtil

    assert t.metadata_location
    fio = _BackendIO(t.account_id, t.partition)
    metadata = TableMetadataUtil.parse_raw(json.dumps(_metadata(t)))
    table = Table((t.namespace, t.name), metadata, t.metadata_location, cast(Any, fio), cast(Any, _Service(t)))
    table.append(pa.Table.from_pylist(rows, schema=metadata.schema().as_arrow()))


class _Service:
    """The catalog surface pyiceberg's `Table` commits through: the service swaps the metadata location itself."""

    def __init__(self, t: Any) -> None:
        self.t = t

    def commit_table(self, table: Any, requirements: tuple[Any, ...], updates: tuple[Any, ...]) -> Any:
        from pyiceberg.serializers import ToOutputFile
        from pyiceberg.table import CommitTableResponse
        from pyiceberg.table.update import update_table_metadata

        for req in requirements:
            req.validate(table.metadata)
        new = update_table_metadata(table.metadata, updates, metadata_location=table.metadata_location)
        version = int(self.t.metadata_location.rsplit("/", 1)[-1].split("-", 1)[0]) + 1
        location = f"{self.t.warehouse_location}/metadata/{version:05d}-{new.table_uuid}-putrows.metadata.json"
        ToOutputFile.table_metadata(new, table.io.new_output(location), overwrite=True)
        self.t.metadata_location = location
        self.t.version_token = self.t._generate_version_token()
        self.t.was_modified(by=self.t.account_id)
        return CommitTableResponse(metadata=new, **{"metadata-location": location})

    def _delete_old_metadata(self, *args: Any) -> None:
        return None


def _split(location: str) -> tuple[str, str]:
    bucket, _, key = location.removeprefix("s3://").partition("/")
    return bucket, key


class _BackendIO:
    """A pyiceberg FileIO over moto's S3 backend in this process (the service writes its own storage, no HTTP)."""

    def __init__(self, account: str, partition: str) -> None:
        self.s3 = _s3_backend(account, partition)
        self.properties: dict[str, str] = {}

    def new_input(self, location: str) -> Any:
        from pyiceberg.io import InputFile

        s3, (bucket, key) = self.s3, _split(location)

        class _In(InputFile):
            def __len__(self) -> int:
                return len(s3.get_object(bucket, key).value)

            def exists(self) -> bool:
                try:
                    return s3.get_object(bucket, key) is not None
                except Exception:
                    return False

            def open(self, seekable: bool = True) -> Any:
                return io.BytesIO(s3.get_object(bucket, key).value)

        return _In(location)

    def new_output(self, location: str) -> Any:
        from pyiceberg.io import OutputFile

        s3, io_ = self.s3, self
        bucket, key = _split(location)

        class _Stream(io.BytesIO):
            def close(self) -> None:
                if not self.closed:
                    s3.put_object(bucket_name=bucket, key_name=key, value=self.getvalue())
                super().close()

        class _Out(OutputFile):
            def __len__(self) -> int:
                return len(s3.get_object(bucket, key).value)

            def exists(self) -> bool:
                return bool(io_.new_input(location).exists())

            def to_input_file(self) -> Any:
                return io_.new_input(location)

            def create(self, overwrite: bool = False) -> Any:
                return _Stream()

        return _Out(location)

    def delete(self, location: Any) -> None:
        return None
