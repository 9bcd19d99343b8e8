"""``docs/deploy.md`` quotes deployment files from their one place, byte for byte.

A quote sits between ``<!-- quote: <path from the repository root> -->`` and
``<!-- end quote -->`` around one fenced code block (any info string: ``ini``, ``dockerfile``,
``yaml``, ``sh``); the block's body must equal the file. Every quote block is checked, and the
files the page must quote are listed in ``QUOTED``: the live stack's Airflow settings
(``orchestration/airflow/deploy/airflow.cfg``, what ``scripts/livestack.py`` reads) and the three
files of the KubernetesExecutor section (``test_deploy_kubernetes.py`` checks what they say).
The settings file must also parse as Airflow reads it (``configparser``) and name the
LocalExecutor the tests use.
"""

from __future__ import annotations

import configparser
import re

from dagcheck import REPO_ROOT
from livestack import AIRFLOW_CFG

DOC = REPO_ROOT / "docs" / "deploy.md"
QUOTE = re.compile(
    r"<!-- quote: (?P<path>[^ ]+) -->\n```(?P<info>[a-z]*)\n(?P<body>.*?)```\n<!-- end quote -->",
    re.DOTALL,
)
QUOTED = {
    "orchestration/airflow/deploy/airflow.cfg": "ini",
    "orchestration/airflow/deploy/kubernetes/Dockerfile": "dockerfile",
    "orchestration/airflow/deploy/kubernetes/airflow-kubernetes.env": "sh",
    "orchestration/airflow/deploy/kubernetes/pod-template.yaml": "yaml",
}


def test_every_quote_equals_its_file_and_the_page_quotes_the_deployment_files() -> None:
    doc = DOC.read_text(encoding="utf-8")
    quotes = list(QUOTE.finditer(doc))
    # A marker the pattern did not take (a broken fence, a missing end) is a quote nobody checks.
    assert len(quotes) == doc.count("<!-- quote: ") == doc.count("<!-- end quote -->"), "a quote block of docs/deploy.md is malformed"
    found = {}
    for match in quotes:
        path = match.group("path")
        assert (REPO_ROOT / path).is_file(), f"docs/deploy.md quotes {path}, which does not exist"
        assert match.group("body") == (REPO_ROOT / path).read_text(encoding="utf-8"), f"docs/deploy.md's quote of {path} differs from the file"
        found[path] = match.group("info")
    assert found == QUOTED


def test_stack_settings_parse_as_airflow_reads_them() -> None:
    assert AIRFLOW_CFG == REPO_ROOT / "orchestration" / "airflow" / "deploy" / "airflow.cfg"
    parser = configparser.ConfigParser()
    parser.read_string(AIRFLOW_CFG.read_text(encoding="utf-8"))
    assert parser.get("core", "executor") == "LocalExecutor"
    assert parser.getboolean("core", "dags_are_paused_at_creation") is True
    assert parser.getint("core", "parallelism") >= 1
