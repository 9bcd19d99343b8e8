"""Read the KubernetesExecutor deployment files with the image's own Airflow and providers.

    <image venv>/bin/python test/python/k8s_probe.py POD_TEMPLATE

Run by ``test_deploy_kubernetes.py`` in the throwaway virtual environment that holds what the
Dockerfile installs (Airflow 3.2.2, the Kubernetes, Git and other providers, the runtime wheel),
with the variables of ``airflow-kubernetes.env`` in its environment (and a stand-in Git
Connection, no secret of any deployment). It imports nothing of this repository and prints one
JSON object on its last line:

* ``options``: ``{section: [option, ...]}`` every option Airflow's ``config.yml`` and the
  installed providers' ``get_provider_info()["config"]`` describe;
* ``values``: ``{"section.key": value}`` each ``AIRFLOW__SECTION__KEY`` of the environment as
  ``conf`` reads it (booleans through ``getboolean``, integers through ``getint``);
* ``executors``: the executor names ``ExecutorLoader`` resolves, with the imported class path;
* ``kube_config``: what the provider's ``KubeConfig`` reads from the settings;
* ``bundles``: each bundle Airflow's ``DagBundlesManager`` makes from the config list (name,
  class path, tracking ref, subdir, the hook's repository URL);
* ``pod``: the pod template as ``PodGenerator.deserialize_model_file`` loads it, and the pod
  ``PodGenerator.construct_pod`` builds from it for one task, as the executor does.

Errors: any exception propagates (a non-zero exit and a traceback the test shows).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from typing import Any


def _option_value(conf: Any, section: str, key: str, description: dict[str, Any]) -> Any:
    kind = description.get(section, {}).get("options", {}).get(key, {}).get("type")
    # Some boolean options are described as strings (core.load_examples): read a true/false
    # value as Airflow's getboolean does, which raises on anything else.
    if kind == "boolean" or str(conf.get(section, key)).lower() in ("true", "false"):
        return conf.getboolean(section, key)
    if kind == "integer":
        return conf.getint(section, key)
    return conf.get(section, key)


def main(pod_template: str) -> dict[str, Any]:
    from airflow.configuration import conf, retrieve_configuration_description

    conf.load_providers_configuration()
    description = retrieve_configuration_description(include_airflow=True, include_providers=True)
    options = {section: sorted(body.get("options", {})) for section, body in description.items()}

    values: dict[str, Any] = {}
    for name in sorted(os.environ):
        if name.startswith("AIRFLOW__") and name.count("__") >= 2:
            section, key = name[len("AIRFLOW__") :].lower().split("__", 1)
            values[f"{section}.{key}"] = _option_value(conf, section, key, description)

    from airflow.executors.executor_loader import ExecutorLoader

    executors = []
    for executor_name in ExecutorLoader.get_executor_names(validate_teams=False):
        cls, _source = ExecutorLoader.import_executor_cls(executor_name)
        executors.append({"alias": executor_name.alias, "module_path": executor_name.module_path, "class": f"{cls.__module__}.{cls.__qualname__}"})

    from airflow.providers.cncf.kubernetes.kube_config import KubeConfig

    kube = KubeConfig()
    kube_config = {
        "namespace": kube.kube_namespace,
        "pod_template_file": kube.pod_template_file,
        "worker_container_repository": kube.worker_container_repository,
        "worker_container_tag": kube.worker_container_tag,
        "delete_worker_pods": kube.delete_worker_pods,
        "delete_worker_pods_on_failure": kube.delete_worker_pods_on_failure,
    }

    from airflow.dag_processing.bundles.manager import DagBundlesManager

    manager = DagBundlesManager()
    manager.parse_config()
    bundles = []
    for bundle in manager.get_all_dag_bundles():
        bundles.append(
            {
                "name": bundle.name,
                "class": f"{type(bundle).__module__}.{type(bundle).__qualname__}",
                "tracking_ref": getattr(bundle, "tracking_ref", None),
                "subdir": getattr(bundle, "subdir", None),
                "git_conn_id": getattr(bundle, "git_conn_id", None),
                "repo_url": getattr(getattr(bundle, "hook", None), "repo_url", None),
            }
        )

    from airflow.providers.cncf.kubernetes.pod_generator import PodGenerator

    base = PodGenerator.deserialize_model_file(pod_template)
    pod = PodGenerator.construct_pod(
        dag_id="sales.orders_daily",
        task_id="produce",
        pod_id="sales-orders-daily-produce",
        try_number=1,
        kube_image=f"{kube.worker_container_repository}:{kube.worker_container_tag}",
        date=datetime.datetime(2026, 4, 15, 2, tzinfo=datetime.UTC),
        args=["python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string", "{}"],
        pod_override_object=None,
        base_worker_pod=base,
        namespace=kube.kube_namespace,
        scheduler_job_id="1",
        run_id="manual__2026-04-15T02:00:00+00:00",
    )
    return {
        "options": options,
        "values": values,
        "executors": executors,
        "kube_config": kube_config,
        "bundles": bundles,
        "template": PodGenerator.serialize_pod(base),
        "pod": PodGenerator.serialize_pod(pod),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), default=str))
