"""Repair a defect of the installed apache-airflow-core 3.2.x that stops every task from running.

    .venv/bin/python scripts/fix-airflow.py        # called by scripts/python-env.sh

apache-airflow-core 3.2.2 (and 3.2.1) as published declares the execution API's state-update
payload with ``Field(discriminator=ti_state_discriminator)``. pydantic only accepts a field
name or a ``Discriminator`` object there (checked with pydantic 2.10 to 2.14), so building the
Execution API fails with ``PydanticUserError: Model 'TITerminalStatePayload' needs a
discriminator field for key <function ti_state_discriminator>`` and no task can run: not under
a scheduler and not with ``airflow dags test``. Upstream Airflow writes
``Discriminator(ti_state_discriminator)``; this script makes the installed file say the same.

Idempotent: it edits the file only when it holds the defective line, then checks that the
payload type builds. Exit status 0 when the installed Airflow is (now) fine, 1 otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

RELATIVE = Path("airflow/api_fastapi/execution_api/datamodels/taskinstance.py")
DEFECT = "    Field(discriminator=ti_state_discriminator),\n"
FIXED = "    Discriminator(ti_state_discriminator),\n"
IMPORT_BEFORE = "from pydantic import (\n    AwareDatetime,\n"
IMPORT_AFTER = "from pydantic import (\n    AwareDatetime,\n    Discriminator,\n"

CHECK = (
    "from pydantic import TypeAdapter\n"
    "from airflow.api_fastapi.execution_api.datamodels.taskinstance import TIStateUpdate\n"
    "TypeAdapter(TIStateUpdate)\n"
)


def main() -> int:
    path = Path(sysconfig.get_paths()["purelib"]) / RELATIVE
    if not path.is_file():
        print(f"fix-airflow: {RELATIVE} not installed; nothing to do")
        return 0
    text = path.read_text(encoding="utf-8")
    if DEFECT in text:
        if IMPORT_BEFORE not in text:
            print(f"fix-airflow: {path} has the defect but an unexpected import block; not editing", file=sys.stderr)
            return 1
        text = text.replace(DEFECT, FIXED).replace(IMPORT_BEFORE, IMPORT_AFTER, 1)
        tmp = path.with_suffix(".py.fix-airflow")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        print("fix-airflow: patched the execution API's TIStateUpdate discriminator (Airflow 3.2.x defect)")
    with tempfile.TemporaryDirectory(prefix="fix-airflow-home-") as home:
        env = dict(os.environ, AIRFLOW_HOME=home, AIRFLOW__CORE__LOAD_EXAMPLES="False")
        env.pop("AIRFLOW_CONFIG", None)
        check = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, check=False)
    if check.returncode != 0:
        print("fix-airflow: the execution API payload type still does not build:", file=sys.stderr)
        print(check.stderr.strip().splitlines()[-1] if check.stderr.strip() else "(no message)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
