"""Files of a finished repair-dataset export: one by name, or all of them as a zip streamed in chunks.

The zip holds exactly what the export's manifest names (the JSONL files and the JSON
Schemas shipped with them) and the manifest.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

from django.http import FileResponse, Http404, StreamingHttpResponse

from exports.core.manifest import MANIFEST_NAME, archive_names
from exports.models import ExportJob, ExportStatus
from exports.services import export_folder

CHUNK = 1 << 20
MSG_NOT_READY = "This export has not finished."


def export_file_names(job: ExportJob) -> list[str]:
    """The files a finished job offers: one JSONL per kind, then the manifest."""
    if job.status != ExportStatus.DONE:
        return []
    return [f"{kind}.jsonl" for kind in job.kinds] + [MANIFEST_NAME]


def export_archive_names(job: ExportJob) -> list[str]:
    """Every file a finished job holds, as its manifest names them, then the manifest."""
    if job.status != ExportStatus.DONE:
        return []
    return archive_names(job.manifest) if job.manifest else export_file_names(job)


def _path(job: ExportJob, name: str, offered: list[str] | None = None) -> Path:
    # Only names the job itself lists are served: the URL never reaches the file system.
    if name not in (export_file_names(job) if offered is None else offered) or "/" in name:
        raise Http404("No such file.")
    path = export_folder(job) / name
    if not path.is_file():
        raise Http404("No such file.")
    return path


def file_response(job: ExportJob, name: str) -> FileResponse:
    path = _path(job, name)
    content_type = "application/json" if name.endswith(".json") else "application/x-ndjson"
    return FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=f"{job.project.slug}-export-{job.pk}-{name}",
        content_type=content_type,
    )


class _Pipe:
    """A write-only sink that ``zipfile`` fills and the response drains."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None

    def take(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data


def zip_chunks(paths: list[Path], folder_name: str) -> Iterator[bytes]:
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in paths:
            info = zipfile.ZipInfo(f"{folder_name}/{path.name}")
            info.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                while chunk := source.read(CHUNK):
                    target.write(chunk)
                    if data := pipe.take():
                        yield data
            if data := pipe.take():
                yield data
    yield pipe.take()


def zip_response(job: ExportJob) -> StreamingHttpResponse:
    names = export_archive_names(job)
    if not names:
        raise Http404(MSG_NOT_READY)
    paths = [_path(job, name, names) for name in names]
    folder_name = f"{job.project.slug}-export-{job.pk}"
    response = StreamingHttpResponse(zip_chunks(paths, folder_name), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{folder_name}.zip"'
    return response
