"""The deployment files cannot rot: every command in the compose file, the Kubernetes manifests and the
Dockerfile is the one deploy/topology.py gives for the same settings, and names a real entry point."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.topology import GUNICORN_CONFIG, POOL_QUEUES, ProcessSpec, process_specs
from shared.queue import QUEUES
from shared.settings import Settings
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"


def dotenv(path: Path) -> dict[str, str]:
    pairs = (
        line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#")
    )
    return {key.strip(): value.strip() for key, value in pairs}


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def k8s_containers() -> dict[str, dict[str, Any]]:
    """Name of each Deployment or Job -> its first container."""
    found = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") in ("Deployment", "Job"):
                found[doc["metadata"]["name"]] = doc["spec"]["template"]["spec"]["containers"][0]
    return found


def k8s_settings() -> Settings:
    env: dict[str, str] = {}
    for name in ("configmap.yaml", "secret.example.yaml"):
        doc = yaml.safe_load((DEPLOY / "k8s" / name).read_text())
        env.update({k: str(v) for k, v in (doc.get("data") or doc.get("stringData")).items()})
    return Settings.from_env(env)


def test_the_compose_file_runs_every_process_of_the_topology_with_its_command() -> None:
    # Given the settings the compose file's services get (the example environment and their own)
    services = compose()["services"]
    base = dotenv(DEPLOY / ".env.example")
    for spec in process_specs(Settings.from_env(base)):
        service = services[spec.name]
        own = Settings.from_env(
            {**base, **{k: str(v) for k, v in (service.get("environment") or {}).items()}}
        )
        # Then each process of the topology is a service running the topology's command
        (expected,) = [s for s in process_specs(own) if s.name == spec.name]
        assert service["command"] == expected.command, spec.name
        assert service.get("restart") == "unless-stopped", spec.name


def test_the_kubernetes_manifests_run_every_process_of_the_topology_with_its_command() -> None:
    containers = k8s_containers()
    for spec in process_specs(k8s_settings()):
        assert containers[spec.name]["command"] == spec.command, spec.name


def test_migrations_run_the_same_command_everywhere() -> None:
    migrate = ["python", "-m", "ingest_worker.cli", "migrate"]
    assert compose()["services"]["migrate"]["command"] == migrate
    assert k8s_containers()["pdf-ingest-migrate"]["command"] == migrate
    assert "migrate" in (ROOT / "ingest_worker" / "cli.py").read_text()


def test_the_image_starts_the_gateway_by_default_and_ships_what_the_commands_need() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    (gateway,) = [s for s in process_specs(Settings()) if s.name == "gateway"]
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE)
    assert cmd is not None and json.loads(cmd.group(1)) == gateway.command
    assert GUNICORN_CONFIG in dockerfile and "USER ingest" in dockerfile
    for package in ("gateway/", "ingest_worker/", "shared/"):
        assert f"COPY {package} {package}" in dockerfile


@pytest.mark.parametrize("spec", process_specs(Settings()), ids=lambda s: s.name)
def test_each_command_names_a_real_entry_point(spec: ProcessSpec) -> None:
    # Given a command of the topology: `python -m <module> ...`
    assert spec.command[:2] == ["python", "-m"]
    module, args = spec.command[2], spec.command[3:]
    # Then its module exists, and so does everything it names
    assert importlib.util.find_spec(module) is not None, module
    if module == "gunicorn":
        config, app = args[args.index("-c") + 1], args[-1]
        assert (ROOT / config).is_file()
        app_module, attribute = app.split(":")
        source = Path(importlib.util.find_spec(app_module).origin or "").read_text()  # type: ignore[union-attr]
        assert re.search(rf"^{attribute} = ", source, re.MULTILINE)
    elif module == "dramatiq":
        assert importlib.util.find_spec(args[0]) is not None
        queues = args[args.index("-Q") + 1 :]
        assert queues and set(queues) <= set(QUEUES)


def test_the_pools_serve_every_queue_of_the_message_contract_once() -> None:
    served = [q for queues in POOL_QUEUES.values() for q in queues]
    assert sorted(served) == sorted(QUEUES)


def test_without_a_qdrant_server_one_single_threaded_process_owns_the_local_folder() -> None:
    settings = Settings(index_worker_processes=4, index_worker_threads=4)
    (index,) = [s for s in process_specs(settings) if s.name == "worker-index"]
    args = index.command
    assert args[args.index("--processes") + 1] == "1" and args[args.index("--threads") + 1] == "1"
    served = process_specs(settings.replace(qdrant_url="http://qdrant:6333"))
    (index,) = [s for s in served if s.name == "worker-index"]
    assert index.command[index.command.index("--processes") + 1] == "4"


def test_pools_on_one_host_get_distinct_metrics_ports() -> None:
    specs = process_specs(Settings(metrics_port=9300))
    ports = [s.env["INGEST_METRICS_PORT"] for s in specs if s.name.startswith("worker-")]
    assert ports == ["9300", "9301", "9302", "9303"]
    assert all(
        Settings.from_env(s.env) == Settings(metrics_port=int(s.env.get("INGEST_METRICS_PORT", 9300)))
        for s in specs
    )


def test_the_makefile_and_the_image_install_the_ocr_languages_the_service_offers() -> None:
    # Given the languages uploads may name by default, and the packs each install path brings
    offered = set(Settings().ocr_available_languages.split(","))
    makefile = (ROOT / "Makefile").read_text()
    declared = re.search(r"^OCR_LANGS \?= (.+)$", makefile, re.M)
    assert declared is not None
    make_langs = set(declared.group(1).split())
    image_langs = set(re.findall(r"tesseract-ocr-([a-z_]+)", (ROOT / "deploy" / "Dockerfile").read_text()))

    # Then both install exactly those, so no worker refuses to start for a missing pack
    assert make_langs == offered
    assert image_langs == offered
