"""``docs/deploy.md`` quotes the live stack's Airflow settings from their one place
(``orchestration/airflow/deploy/airflow.cfg``), and that file is what the stack reads.

The quote sits between ``<!-- quote: orchestration/airflow/deploy/airflow.cfg -->`` and
``<!-- end quote -->`` in an ``ini`` code block; it must equal the file byte for byte. The file
must parse as Airflow reads it (``configparser``) and name the LocalExecutor the tests use.
"""

from __future__ import annotations

import configparser
import re

from dagcheck import REPO_ROOT
from livestack import AIRFLOW_CFG

QUOTE = re.compile(
    r"<!-- quote: orchestration/airflow/deploy/airflow.cfg -->\n```ini\n(?P<body>.*?)```\n<!-- end quote -->",
    re.DOTALL,
)


def test_deploy_doc_quotes_the_stack_settings() -> None:
    doc = (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    match = QUOTE.search(doc)
    assert match, "docs/deploy.md has no quote block of orchestration/airflow/deploy/airflow.cfg"
    assert match.group("body") == AIRFLOW_CFG.read_text(encoding="utf-8")


def test_stack_settings_parse_as_airflow_reads_them() -> None:
    assert AIRFLOW_CFG == REPO_ROOT / "orchestration" / "airflow" / "deploy" / "airflow.cfg"
    parser = configparser.ConfigParser()
    parser.read_string(AIRFLOW_CFG.read_text(encoding="utf-8"))
    assert parser.get("core", "executor") == "LocalExecutor"
    assert parser.getboolean("core", "dags_are_paused_at_creation") is True
    assert parser.getint("core", "parallelism") >= 1
