"""Byte-for-byte object copy with bounded memory, for the recovery's file copy and the vault backup (runs inside Spark
executors; no Spark here).

Only the object operations S3 Tables table storage supports are used
(docs/aws-facts.md#table-storage-object-operations): GetObject, HeadObject, PutObject (`If-None-Match: *`,
`x-amz-checksum-crc32`), CreateMultipartUpload / UploadPart / CompleteMultipartUpload (`If-None-Match: *`) /
AbortMultipartUpload. Never CopyObject, UploadPartCopy, ListObjects or DeleteObject: the data is streamed through the
task, which also computes the CRC32 of the bytes it read.

Memory per task: one part (`part_size`, multipart above it) plus one read chunk. Position-delete files are the
exception: they are rewritten (their `file_path` column names data files by absolute path) and are read whole; they are
small (a few bytes per deleted row).

Local paths (`file:/...` or `/...`) take the same code path with files instead of objects, for the drill and tests.

Rerun convergence: a target object that already exists (an earlier, failed attempt into the same table location) is
re-used when its size and CRC32 equal the source's; otherwise the copy goes to `alt_dst` (a name with the run id), so a
byte is never overwritten.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

CHUNK = 4 * 1024 * 1024
DEFAULT_PART_SIZE = 64 * 1024 * 1024  # single PutObject up to this size, multipart above (S3 minimum part: 5 MiB)


@dataclass(frozen=True)
class StoreConfig:
    """How a task reaches object storage (credentials come from the environment / instance role)."""

    region: str | None = None
    endpoint: str | None = None
    part_size: int = DEFAULT_PART_SIZE
    storage_class: str | None = None  # S3 storage class of written objects (the vault's); None: the store's default


@dataclass(frozen=True)
class CopyItem:
    src: str
    dst: str
    alt_dst: str
    size: int  # from the manifest
    kind: str = "data"  # data | position-deletes
    src_prefix: str = ""  # position-deletes: replica table location (file_path values are rewritten from ...)
    dst_prefix: str = ""  # ... to the target table location
    src_version: str = ""  # the S3 version of `src` to read (a vault point's file), else its current version


@dataclass
class CopyResult:
    src: str
    dst: str  # where the bytes are (dst, or alt_dst)
    kind: str
    source_size: int  # bytes read from the replica (data: must equal the manifest's size)
    size: int  # bytes written
    crc32: int  # of the bytes written, computed while streaming
    part_crcs: list[int] = field(default_factory=list)  # multipart: CRC32 of each part (S3's composite checksum)
    reused: bool = False
    seconds: float = 0.0
    records: int | None = None  # position-deletes: rows rewritten
    version: str = ""  # S3 version id of the object at `dst` (written, or reused), "" where unversioned
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- paths ------------------------------------------------------------------------------------------------------


def is_local(uri: str) -> bool:
    return uri.startswith("file:") or uri.startswith("/")


def local_path(uri: str) -> str:
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if uri.startswith("file:"):
        return uri[len("file:") :]
    return uri


def split_s3(uri: str) -> tuple[str, str]:
    for scheme in ("s3://", "s3a://", "s3n://"):
        if uri.startswith(scheme):
            bucket, _, key = uri[len(scheme) :].partition("/")
            if not bucket or not key:
                break
            return bucket, key
    raise ValueError(f"{uri}: not an s3:// object URI")


def relocate(path: str, src_prefix: str, dst_prefix: str) -> str:
    """`path` under `src_prefix` moved under `dst_prefix` (Iceberg's `RewriteTablePathUtil.newPath`)."""
    s = src_prefix.rstrip("/") + "/"
    if not path.startswith(s):
        raise ValueError(f"{path} is not under the table location {src_prefix}")
    return dst_prefix.rstrip("/") + "/" + path[len(s) :]


def alt_name(path: str, run_id: str) -> str:
    head, dot, ext = path.rpartition(".")
    if not dot or "/" in ext:
        return f"{path}-r{run_id}"
    return f"{head}-r{run_id}.{ext}"


def b64crc(value: int) -> str:
    return base64.b64encode(value.to_bytes(4, "big")).decode()


def composite_crc(part_crcs: list[int]) -> int:
    """S3's checksum of a multipart object: CRC32 over the concatenated binary CRC32 of each part."""
    return zlib.crc32(b"".join(c.to_bytes(4, "big") for c in part_crcs))


# --- clients ----------------------------------------------------------------------------------------------------

_CLIENTS: dict[tuple[str | None, str | None], Any] = {}


def object_client(region: str | None, endpoint: str | None, *, data_plane: bool = True, **config: Any) -> Any:
    """A new S3 client for object traffic: path-style on an endpoint, checksums where the call asks for them (the copy
    sends its own CRC32). `data_plane`: the kit's bulk retry mode (`s3tables_kit.jobs.kernel.sdk`), else the standard
    one."""
    from s3tables_kit.jobs.kernel import sdk

    return sdk.client(
        "s3",
        region,
        endpoint,
        data_plane=data_plane,
        s3={"addressing_style": "path"} if endpoint else {},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        **config,
    )


def s3_client(cfg: StoreConfig) -> Any:
    """The process's shared client of the file copy (one per Region and endpoint)."""
    key = (cfg.region, cfg.endpoint)
    if key not in _CLIENTS:
        _CLIENTS[key] = object_client(cfg.region, cfg.endpoint)
    return _CLIENTS[key]


def _is_status(e: Exception, *codes: str) -> bool:
    resp = getattr(e, "response", None) or {}
    err = resp.get("Error", {})
    status = str(resp.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
    return str(err.get("Code")) in codes or status in codes


# --- reading ------------------------------------------------------------------------------------------------------


def read_chunks(uri: str, cfg: StoreConfig, chunk: int = CHUNK, version: str = "") -> Iterator[bytes]:
    """The object's bytes in chunks (GetObject, streamed): of the S3 version `version` when given."""
    if is_local(uri):
        with open(local_path(uri), "rb") as fh:
            while True:
                b = fh.read(chunk)
                if not b:
                    return
                yield b
    else:
        bucket, key = split_s3(uri)
        body = s3_client(cfg).get_object(Bucket=bucket, Key=key, **({"VersionId": version} if version else {}))["Body"]
        try:
            yield from body.iter_chunks(chunk)
        finally:
            body.close()


def read_all(uri: str, cfg: StoreConfig, version: str = "") -> bytes:
    return b"".join(read_chunks(uri, cfg, version=version))


def head(uri: str, cfg: StoreConfig) -> tuple[int, str | None] | None:
    """(size, stored CRC32 checksum or None), or None when there is no such object (HeadObject)."""
    h = head_version(uri, cfg)
    return None if h is None else h[:2]


def head_version(uri: str, cfg: StoreConfig) -> tuple[int, str | None, str] | None:
    """(size, stored CRC32 checksum or None, S3 version id or ""), or None when there is no such object."""
    if is_local(uri):
        p = local_path(uri)
        return (os.path.getsize(p), None, "") if os.path.exists(p) else None
    bucket, key = split_s3(uri)
    try:
        r = s3_client(cfg).head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    except Exception as e:
        if _is_status(e, "404", "NoSuchKey", "NotFound"):
            return None
        raise
    return int(r["ContentLength"]), r.get("ChecksumCRC32"), str(r.get("VersionId") or "")


def crc_of(uri: str, cfg: StoreConfig, version: str = "") -> tuple[int, int]:
    """(size, CRC32) by reading the object again (GetObject; the S3 version `version` when given)."""
    crc, n = 0, 0
    for b in read_chunks(uri, cfg, version=version):
        crc = zlib.crc32(b, crc)
        n += len(b)
    return n, crc


# --- writing ------------------------------------------------------------------------------------------------------


class Exists(Exception):
    """The target object exists already (If-None-Match / exclusive create refused the write)."""


def _class(cfg: StoreConfig) -> dict[str, str]:
    return {"StorageClass": cfg.storage_class} if cfg.storage_class else {}


class _Writer:
    """Streams parts into one new object; never overwrites (If-None-Match: * / O_EXCL)."""

    def __init__(self, uri: str, cfg: StoreConfig) -> None:
        self.uri, self.cfg = uri, cfg
        self.buf = bytearray()
        self.size = 0
        self.crc = 0
        self.part_crcs: list[int] = []
        self.parts: list[dict[str, Any]] = []
        self.upload_id: str | None = None
        self.version = ""  # the S3 version id the write created
        self.fh: Any = None
        if is_local(uri):
            p = local_path(uri)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            try:
                self.fh = open(p, "xb")  # noqa: SIM115 - closed in close()/abort()
            except FileExistsError:
                raise Exists(uri) from None

    def write(self, b: bytes) -> None:
        self.size += len(b)
        self.crc = zlib.crc32(b, self.crc)
        if self.fh is not None:
            self.fh.write(b)
            return
        self.buf += b
        while len(self.buf) >= self.cfg.part_size:
            part = bytes(self.buf[: self.cfg.part_size])
            del self.buf[: self.cfg.part_size]
            self._upload_part(part)

    def _upload_part(self, part: bytes) -> None:
        bucket, key = split_s3(self.uri)
        client = s3_client(self.cfg)
        if self.upload_id is None:
            self.upload_id = client.create_multipart_upload(
                Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32", **_class(self.cfg)
            )["UploadId"]
        n = len(self.parts) + 1
        crc = zlib.crc32(part)
        r = client.upload_part(
            Bucket=bucket, Key=key, UploadId=self.upload_id, PartNumber=n, Body=part, ChecksumCRC32=b64crc(crc)
        )
        self.parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32": b64crc(crc)})
        self.part_crcs.append(crc)

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            return
        bucket, key = split_s3(self.uri)
        client = s3_client(self.cfg)
        if self.upload_id is None:  # one PutObject
            try:
                r = client.put_object(
                    Bucket=bucket,
                    Key=key,
                    Body=bytes(self.buf),
                    ChecksumAlgorithm="CRC32",
                    ChecksumCRC32=b64crc(self.crc),
                    IfNoneMatch="*",
                    **_class(self.cfg),
                )
            except Exception as e:
                if _is_status(e, "412", "PreconditionFailed"):
                    raise Exists(self.uri) from None
                raise
            self.version = str(r.get("VersionId") or "")
            return
        if self.buf:
            self._upload_part(bytes(self.buf))
            self.buf.clear()
        try:
            r = client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=self.upload_id,
                MultipartUpload={"Parts": self.parts},
                IfNoneMatch="*",
            )
        except Exception as e:
            self.abort()
            if _is_status(e, "412", "PreconditionFailed"):
                raise Exists(self.uri) from None
            raise
        self.version = str(r.get("VersionId") or "")

    def abort(self) -> None:
        if self.fh is not None:
            self.fh.close()
            os.unlink(local_path(self.uri))  # our own half-written local file (local warehouses only)
            self.fh = None
        elif self.upload_id is not None:
            bucket, key = split_s3(self.uri)
            with contextlib.suppress(Exception):  # best effort; a lifecycle rule or S3 Tables expires the upload
                s3_client(self.cfg).abort_multipart_upload(Bucket=bucket, Key=key, UploadId=self.upload_id)
            self.upload_id = None


def _write(uri: str, chunks: Iterable[bytes], cfg: StoreConfig) -> _Writer:
    w = _Writer(uri, cfg)
    try:
        for b in chunks:
            w.write(b)
        w.close()
    except Exists:
        raise
    except BaseException:
        w.abort()
        raise
    return w


# --- one item -----------------------------------------------------------------------------------------------------


def _rewrite_deletes(raw: bytes, src_prefix: str, dst_prefix: str) -> tuple[bytes, int]:
    """A position-delete Parquet file with every `file_path` moved from the replica's location to the target's.
    Row order (file_path, pos) is kept: one common prefix is replaced by another. Field ids and the rest of the
    schema are kept (pyarrow carries `PARQUET:field_id`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(raw))
    col = table.column("file_path")
    s = src_prefix.rstrip("/") + "/"
    if len(col) and not pc.all(pc.starts_with(col, s)).as_py():
        raise ValueError(f"a position delete names a data file outside the table location {src_prefix}")
    moved = pc.binary_join_element_wise(dst_prefix.rstrip("/") + "/", pc.utf8_slice_codeunits(col, len(s)), "").cast(
        col.type
    )
    i = table.schema.get_field_index("file_path")
    table = table.set_column(i, table.schema.field(i), moved)
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue(), table.num_rows


def _material(item: CopyItem, cfg: StoreConfig) -> tuple[Iterable[bytes], list[int], int | None]:
    """The bytes to write (streamed for data files), a cell with the number of source bytes read, and the number of
    position-delete rows rewritten."""
    read = [0]
    if item.kind == "position-deletes":
        raw = read_all(item.src, cfg, item.src_version)
        read[0] = len(raw)
        data, records = _rewrite_deletes(raw, item.src_prefix, item.dst_prefix)
        return [data[i : i + cfg.part_size] for i in range(0, len(data), cfg.part_size)], read, records

    def counting() -> Iterator[bytes]:
        for b in read_chunks(item.src, cfg, version=item.src_version):
            read[0] += len(b)
            yield b

    return counting(), read, None


def _digest(chunks: Iterable[bytes], part_size: int) -> tuple[int, int, list[int]]:
    """(size, CRC32, part CRC32s as a multipart upload of `part_size` would have them)."""
    crc, n, parts, buf = 0, 0, [], bytearray()
    for b in chunks:
        crc, n = zlib.crc32(b, crc), n + len(b)
        buf += b
        while len(buf) >= part_size:
            parts.append(zlib.crc32(bytes(buf[:part_size])))
            del buf[:part_size]
    if parts and buf:
        parts.append(zlib.crc32(bytes(buf)))
    return n, crc, parts


def _same_as(
    existing: tuple[int, str | None], uri: str, size: int, crc: int, parts: list[int], cfg: StoreConfig
) -> bool:
    esize, stored = existing
    if esize != size:
        return False
    if stored is not None and stored.split("-")[0] in (b64crc(crc), b64crc(composite_crc(parts or [crc]))):
        return True
    return crc_of(uri, cfg)[1] == crc


def copy_one(item: CopyItem, cfg: StoreConfig) -> CopyResult:
    t0 = time.monotonic()
    res = CopyResult(item.src, item.dst, item.kind, 0, 0, 0)
    try:
        for target in (item.dst, item.alt_dst):
            chunks, read, records = _material(item, cfg)
            try:
                w = _write(target, chunks, cfg)
            except Exists:
                # An earlier attempt wrote this name: re-use it when it holds the same bytes, else take alt_dst.
                chunks, read, records = _material(item, cfg)
                n, crc, parts = _digest(chunks, cfg.part_size)
                existing = head_version(target, cfg)
                if existing is not None and _same_as(existing[:2], target, n, crc, parts, cfg):
                    res.dst, res.size, res.crc32, res.part_crcs, res.reused = target, n, crc, parts, True
                    res.version = existing[2]
                    res.source_size, res.records = read[0], records
                    break
                if target == item.alt_dst:
                    raise RuntimeError(f"{target} exists with other content") from None
                continue
            res.dst, res.size, res.crc32, res.part_crcs, res.version = target, w.size, w.crc, w.part_crcs, w.version
            res.source_size, res.records = read[0], records
            break
    except Exception as e:  # reported per file; the driver fails the table
        res.error = f"{type(e).__name__}: {str(e)[:300]}"
    res.seconds = time.monotonic() - t0
    return res


def copy_partition(items: Iterable[CopyItem], cfg: StoreConfig) -> Iterator[dict[str, Any]]:
    """Spark `mapPartitions` body: copy each item in turn (one stream at a time per task)."""
    for item in items:
        yield copy_one(item, cfg).as_dict()


# --- verification of the written objects --------------------------------------------------------------------------


@dataclass
class FileCheck:
    dst: str
    ok: bool
    method: str  # "stored checksum (HeadObject)" | "re-read (GetObject)" | "re-read (local file)"
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_written(r: dict[str, Any], expected_size: int | None, cfg: StoreConfig) -> dict[str, Any]:
    """Size and CRC32 of the written object against what the copy streamed (and, for data files, the manifest's
    size). Uses the checksum S3 stored with the object when it returns one (HeadObject, no data read), else reads
    the object again."""
    dst, size, crc = r["dst"], int(r["size"]), int(r["crc32"])
    problems = []
    if expected_size is not None and int(r["source_size"]) != expected_size:
        problems.append(f"read {r['source_size']} bytes from the replica, the manifest says {expected_size}")
    if r["kind"] == "data" and size != int(r["source_size"]):
        problems.append(f"wrote {size} bytes, read {r['source_size']}")
    h = head(dst, cfg)
    if h is None:
        return FileCheck(dst, False, "HeadObject", "the written object does not exist").as_dict()
    if h[0] != size:
        problems.append(f"object has {h[0]} bytes, {size} were written")
    stored = h[1]
    if stored is not None:
        method = "stored checksum (HeadObject)"
        want = {b64crc(crc), b64crc(composite_crc(r.get("part_crcs") or [crc]))}
        if stored.split("-")[0] not in want:
            problems.append(f"stored CRC32 {stored}, streamed {b64crc(crc)}")
    else:
        method = "re-read (local file)" if is_local(dst) else "re-read (GetObject)"
        n, got = crc_of(dst, cfg)
        if got != crc or n != size:
            problems.append(f"re-read {n} bytes with CRC32 {b64crc(got)}, streamed {b64crc(crc)}")
    return FileCheck(dst, not problems, method, "; ".join(problems)).as_dict()


def check_partition(items: Iterable[tuple[dict[str, Any], int | None]], cfg: StoreConfig) -> Iterator[dict[str, Any]]:
    for r, expected in items:
        try:
            yield check_written(r, expected, cfg)
        except Exception as e:
            yield FileCheck(r["dst"], False, "error", f"{type(e).__name__}: {str(e)[:300]}").as_dict()


def existing_objects(uris: Iterable[str], cfg: StoreConfig) -> list[str]:
    """Which of these objects exist (HeadObject each: table storage cannot be listed)."""
    out = []
    for u in uris:
        try:
            if head(u, cfg) is not None:
                out.append(u)
        except Exception:
            out.append(u)
    return out
