"""One S3 object written through a `BufferedPartWriter`: a PUT, or a multipart upload (created with
its first part, completed or aborted at the end), with vendor errors translated at this boundary."""

from __future__ import annotations

from typing import Any

from shared.storage.s3_errors import VENDOR_ERRORS, translate


class S3Upload:
    """The requests that store one object (shared.storage.parts.PartSink) on an S3 client."""

    def __init__(self, client: Any, bucket: str, key: str) -> None:
        self._client, self._where = client, {"Bucket": bucket, "Key": key}
        self._upload_id = ""
        self._parts: list[dict[str, Any]] = []

    def _call(self, name: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, name)(**self._where, **kwargs)
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc

    def put(self, data: bytes) -> None:
        self._call("put_object", Body=data)

    def part(self, data: bytes) -> None:
        if not self._upload_id:
            self._upload_id = self._call("create_multipart_upload")["UploadId"]
        number = len(self._parts) + 1
        answer = self._call("upload_part", UploadId=self._upload_id, PartNumber=number, Body=data)
        self._parts.append({"ETag": answer["ETag"], "PartNumber": number})

    def complete(self) -> None:
        self._call(
            "complete_multipart_upload", UploadId=self._upload_id, MultipartUpload={"Parts": self._parts}
        )

    def abort(self) -> None:
        if self._upload_id:
            self._call("abort_multipart_upload", UploadId=self._upload_id)
