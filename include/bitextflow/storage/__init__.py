"""Object storage: every stage reads and writes S3 through :class:`ObjectStore`.

Settings come from the environment (``BITEXTFLOW_S3_ENDPOINT_URL``, ``BITEXTFLOW_S3_ACCESS_KEY_ID``,
``BITEXTFLOW_S3_SECRET_ACCESS_KEY``, falling back to the standard ``AWS_*`` variables) or, under
Airflow, from a connection (see ``plugins/bitextflow_airflow``). Failures to reach the endpoint or
rejected credentials raise :class:`~bitextflow.errors.StorageError` with a one-line message; the
secret key never appears in messages or logs.

Objects are written whole (a PUT is atomic in S3), so a reader never sees half an object; a stage
that writes several objects hands their keys downstream only after all are written.
"""

from __future__ import annotations

import io
import json
import mimetypes
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from bitextflow.errors import MissingObjectError, StorageError

if TYPE_CHECKING:
    from pyarrow.fs import S3FileSystem

_CREDENTIAL_ERRORS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "Forbidden", "403"}


@dataclass(frozen=True)
class StorageSettings:
    endpoint_url: str | None
    access_key_id: str | None
    secret_access_key: str | None = field(repr=False)
    region: str = "us-east-1"
    anonymous: bool = False  # unsigned requests (public buckets such as Common Crawl's): no credentials are sent

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StorageSettings:
        env = os.environ if env is None else env

        def pick(*names: str) -> str | None:
            return next((env[n] for n in names if env.get(n)), None)

        return cls(
            endpoint_url=pick("BITEXTFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
            access_key_id=pick("BITEXTFLOW_S3_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
            secret_access_key=pick("BITEXTFLOW_S3_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
            region=pick("BITEXTFLOW_S3_REGION", "AWS_DEFAULT_REGION") or "us-east-1",
        )

    def as_env(self) -> dict[str, str]:
        """The variables that recreate these settings in a child process."""
        values = {
            "BITEXTFLOW_S3_ENDPOINT_URL": self.endpoint_url,
            "BITEXTFLOW_S3_ACCESS_KEY_ID": self.access_key_id,
            "BITEXTFLOW_S3_SECRET_ACCESS_KEY": self.secret_access_key,
            "BITEXTFLOW_S3_REGION": self.region,
        }
        return {k: v for k, v in values.items() if v}


class ObjectStore:
    """A bucket on an S3-compatible store, with errors a user can act on."""

    def __init__(self, settings: StorageSettings, bucket: str):
        self.settings = settings
        self.bucket = bucket
        self._client = boto3.client(
            "s3",
            endpoint_url=settings.endpoint_url,
            aws_access_key_id=None if settings.anonymous else settings.access_key_id,
            aws_secret_access_key=None if settings.anonymous else settings.secret_access_key,
            region_name=settings.region,
            config=Config(
                # Named, although requests are SigV4 anyway: botocore would presign with the deprecated SigV2.
                signature_version=UNSIGNED if settings.anonymous else "s3v4",
                connect_timeout=5,
                read_timeout=60,
                retries={"max_attempts": 5, "mode": "standard"},
                s3={"addressing_style": "path"},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )

    @classmethod
    def from_env(cls, bucket: str, env: Mapping[str, str] | None = None) -> ObjectStore:
        return cls(StorageSettings.from_env(env), bucket)

    # -- errors ---------------------------------------------------------------------------------
    def _where(self) -> str:
        return self.settings.endpoint_url or "AWS S3"

    def _fail(self, exc: Exception, action: str, key: str | None = None) -> StorageError:
        target = f"s3://{self.bucket}/{key}" if key else f"bucket {self.bucket!r}"
        if isinstance(exc, EndpointConnectionError) or (
            isinstance(exc, BotoCoreError) and "connect" in type(exc).__name__.lower()
        ):
            return StorageError(
                f"cannot reach the S3 endpoint {self._where()} to {action} {target}; start it (local stack: "
                "`bitextflow services up`) or set BITEXTFLOW_S3_ENDPOINT_URL to a running endpoint"
            )
        if isinstance(exc, ClientError):
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _CREDENTIAL_ERRORS and self.settings.anonymous:
                return StorageError(
                    f"S3 endpoint {self._where()} refused an anonymous (unsigned) request to {action} {target}: the bucket "
                    "is not public; read it with credentials instead of anonymous access"
                )
            if code in _CREDENTIAL_ERRORS:
                return StorageError(
                    f"S3 endpoint {self._where()} rejected the credentials (access key id "
                    f"{self.settings.access_key_id!r}) to {action} {target}; set BITEXTFLOW_S3_ACCESS_KEY_ID "
                    "and BITEXTFLOW_S3_SECRET_ACCESS_KEY to a valid key pair"
                )
            if code in ("NoSuchKey", "404", "NotFound"):
                return MissingObjectError(f"{target} does not exist (needed to {action}); run the stage that writes it")
            if code in ("InvalidRange", "416"):
                return MissingObjectError(f"{target} is shorter than the byte range asked for (needed to {action})")
            if code == "NoSuchBucket":
                return StorageError(f"bucket {self.bucket!r} does not exist at {self._where()}; create it or fix storage.bucket")
            return StorageError(
                f"S3 error {code} at {self._where()} to {action} {target}: {exc.response['Error'].get('Message', '')}"
            )
        return StorageError(f"S3 failure at {self._where()} to {action} {target}: {type(exc).__name__}: {exc}")

    # -- bucket ---------------------------------------------------------------------------------
    def ensure_bucket(self) -> None:
        """Create the bucket if needed; this is also the connectivity and credentials check."""
        try:
            self._client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code not in ("404", "NoSuchBucket", "NotFound"):
                raise self._fail(exc, "open") from None
        except BotoCoreError as exc:
            raise self._fail(exc, "open") from None
        try:
            self._client.create_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise self._fail(exc, "create") from None
        except BotoCoreError as exc:
            raise self._fail(exc, "create") from None

    # -- objects --------------------------------------------------------------------------------
    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def presigned_url(self, key: str, method: str = "get", *, expires_s: int) -> str:
        """An HTTP URL that reads (``get``) or writes (``put``) ``key`` with no credentials, for a step in another environment.

        A PUT must send ``Content-Type: application/octet-stream``: the type is part of the signature. ``expires_s``
        has no default: the caller knows how long its step may run (and whoever holds the URL can use it that long).
        """
        params = {"Bucket": self.bucket, "Key": key}
        if method == "put":
            params["ContentType"] = "application/octet-stream"
        operation = {"get": "get_object", "put": "put_object"}[method]
        try:
            return self._client.generate_presigned_url(operation, Params=params, ExpiresIn=expires_s)
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, f"sign a {method} URL for", key) from None

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        try:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "write", key) from None
        return key

    def put_file(self, key: str, path: str | Path, content_type: str = "application/octet-stream") -> str:
        try:
            self._client.upload_file(str(path), self.bucket, key, ExtraArgs={"ContentType": content_type})
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "write", key) from None
        except Exception as exc:  # boto3's transfer manager wraps client errors in its own type
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, (BotoCoreError, ClientError)):
                raise self._fail(cause, "write", key) from None
            raise
        return key

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "read", key) from None

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        """``length`` bytes of ``key`` from ``offset``, in one ranged GET (a WARC record by its index entry). At most
        ``length`` bytes are read, even from a server that ignores the range and sends the whole object."""
        try:
            ranged = {"Bucket": self.bucket, "Key": key, "Range": f"bytes={offset}-{offset + length - 1}"}
            body = self._client.get_object(**ranged)["Body"]
            try:
                return body.read(length)
            finally:
                body.close()
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "read", key) from None

    def arrow_filesystem(self) -> S3FileSystem:
        """This store's endpoint and credentials (or unsigned requests) as a pyarrow file system, whose paths are
        ``bucket/key``: for Arrow's dataset scanner, which reads only the columns and row groups a query needs with
        coalesced ranged GETs in C++ threads (docs/commoncrawl.md says why Arrow's scanner)."""
        from pyarrow import fs

        settings = self.settings
        scheme, _, host = (settings.endpoint_url or "").rpartition("://")
        credentials = (
            {} if settings.anonymous else {"access_key": settings.access_key_id, "secret_key": settings.secret_access_key}
        )
        return fs.S3FileSystem(
            **credentials,
            anonymous=settings.anonymous,
            region=settings.region,
            endpoint_override=host or None,
            scheme=scheme or "https",
            connect_timeout=5,
            request_timeout=60,
            retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=5),
        )

    def download_file(self, key: str, path: str | Path) -> Path:
        try:
            self._client.download_file(self.bucket, key, str(path))
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "read", key) from None
        return Path(path)

    def open_read(self, key: str, buffer_bytes: int = 1 << 20) -> io.BufferedReader:
        """``key`` as a seekable binary file read straight from S3, holding at most ``buffer_bytes`` (plus the
        caller's own reads) in memory; nothing is written to disk. See :class:`ObjectReader`."""
        return io.BufferedReader(ObjectReader(self, key), buffer_size=buffer_bytes)

    def put_tree(self, prefix: str, directory: Path) -> list[str]:
        """Upload every file under ``directory`` to ``prefix`` + its relative path, typed by extension."""
        keys = []
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            keys.append(self.put_file(prefix + path.relative_to(directory).as_posix(), path, content_type))
        return keys

    def put_json(self, key: str, value: Any) -> str:
        data = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True).encode("utf-8")
        return self.put_bytes(key, data, "application/json")

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def exists(self, key: str) -> bool:
        try:
            self._client.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise self._fail(exc, "check", key) from None
        except BotoCoreError as exc:
            raise self._fail(exc, "check", key) from None

    def iter_keys(self, prefix: str) -> Iterator[str]:
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    yield item["Key"]
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "list", prefix) from None

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(self.iter_keys(prefix))

    def last_modified(self, prefix: str) -> dict[str, datetime]:
        """Key -> time of its last write (UTC) for every object under ``prefix``."""
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
            return {item["Key"]: item["LastModified"] for page in pages for item in page.get("Contents", [])}
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(exc, "list", prefix) from None

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list_keys(prefix)
        for start in range(0, len(keys), 1000):
            batch = [{"Key": k} for k in keys[start : start + 1000]]
            try:
                self._client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch})
            except (BotoCoreError, ClientError) as exc:
                raise self._fail(exc, "delete", prefix) from None
        return len(keys)


class ObjectReader(io.RawIOBase):
    """One S3 object as a raw, seekable, read-only file: a ranged GET from the current offset, streamed.

    Reads take what the caller asks for from the open response; a seek elsewhere closes it and the next
    read opens a GET from the new offset (one request per seek, which is how a WARC reader skips a
    damaged region). A connection dropped mid-object is resumed from the current offset.

    Why not ``s3fs.S3File``, which does the same: it would be a second S3 client beside the store's boto3
    one, configured separately (endpoint, credentials, anonymous access of ``crawl.warc_buckets``) and
    failing with its own errors, where this class reuses the store's client and its error messages.
    """

    _ATTEMPTS = 3

    def __init__(self, store: ObjectStore, key: str):
        super().__init__()
        self.store, self.key = store, key
        try:
            self.size = int(store._client.head_object(Bucket=store.bucket, Key=key)["ContentLength"])
        except (BotoCoreError, ClientError) as exc:
            raise store._fail(exc, "read", key) from None
        self._position = 0
        self._body = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        position = offset + {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if position < 0:
            raise ValueError(f"negative seek position {position} in {self.store.uri(self.key)}")
        if position != self._position:
            self._close_body()
            self._position = position
        return position

    def readinto(self, buffer) -> int:
        if self._position >= self.size or not len(buffer):
            return 0
        for attempt in range(self._ATTEMPTS):
            try:
                if self._body is None:
                    ranged = {"Bucket": self.store.bucket, "Key": self.key, "Range": f"bytes={self._position}-"}
                    self._body = self.store._client.get_object(**ranged)["Body"]
                data = self._body.read(len(buffer))
                break
            except (BotoCoreError, ClientError) as exc:
                self._close_body()
                if attempt + 1 == self._ATTEMPTS:
                    raise self.store._fail(exc, "read", self.key) from None
        if not data:  # the object is shorter than its HEAD said (replaced while read): end here
            self.size = self._position
            return 0
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def _close_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None

    def close(self) -> None:
        self._close_body()
        super().close()
