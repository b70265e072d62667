"""The values derived from the settings' fields: the folders and URLs their empty defaults stand for."""

from __future__ import annotations

from pathlib import Path


class DerivedSettings:
    """What `Settings` computes from its fields (a base class: the fields themselves are declared there)."""

    data_dir: str
    database_url: str
    storage_dir: str
    qdrant_path: str
    qdrant_url: str
    model_cache_dir: str
    metrics_dir: str
    max_upload_mb: int

    @property
    def effective_database_url(self) -> str:
        """The configured database URL, or the embedded SQLite file."""
        return self.database_url or f"sqlite:///{Path(self.data_dir).resolve() / 'ingest.db'}"

    @property
    def effective_storage_dir(self) -> str:
        """Directory of the local object store."""
        return self.storage_dir or str(Path(self.data_dir) / "objects")

    @property
    def effective_qdrant_path(self) -> str:
        """Folder of the local Qdrant store (used only without a Qdrant URL)."""
        return self.qdrant_path or str(Path(self.data_dir) / "qdrant")

    @property
    def effective_edge_path(self) -> str:
        """Folder of the embedded store's shards, one per collection (used only without a Qdrant URL)."""
        return str(Path(self.data_dir) / "vectors" / "edge")

    @property
    def effective_model_cache_dir(self) -> str:
        """Folder where the offline embedder's ONNX graph is built once and kept."""
        return self.model_cache_dir or str(Path(self.data_dir) / "models")

    @property
    def effective_metrics_dir(self) -> str:
        """Folder under which each process group keeps its Prometheus multiprocess files."""
        return self.metrics_dir or str(Path(self.data_dir) / "metrics")

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def local_qdrant(self) -> bool:
        """True when Qdrant runs in local mode, so one process alone may open its folder."""
        return not self.qdrant_url
