"""Real servers on loopback for the runtime tests: PostgreSQL and an S3 API (moto in server mode).

Not a test module. Each helper is a context manager that starts a real process bound to
127.0.0.1 on a free port the OS hands out, yields how to reach it, and stops it at the end; none
assumes a server is already running. Fixtures in the test modules (or ``conftest.py``) wrap them.

- :func:`postgres_server` is ``livestack.PostgresServer`` (``scripts/livestack.py``): ``initdb``
  into a temporary folder and ``pg_ctl start``; without server binaries it skips.
- :func:`s3_server` runs ``python -m moto.server`` (the ``moto[server]`` package from the lock),
  creates an IAM user with an access key, then switches moto's request authentication on
  (``/moto-api/reset-auth``), so a wrong key is refused like on AWS.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["S3_CONN_ID", "free_port", "postgres_server", "s3_client", "s3_connection_json", "s3_server"]

#: The Airflow Connection id the S3 tests define (``AIRFLOW_CONN_CA_S3``).
S3_CONN_ID = "ca_s3"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that the OS reports free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[dict[str, Any]]:
    """A throw-away PostgreSQL server (``livestack.PostgresServer``, shared with the live stack):
    yields ``{"uri": "postgres://postgres@127.0.0.1:<port>/postgres", "port"}``.

    Skips the calling test (module) when the server binaries are missing.
    """
    from livestack import PostgresServer, StackUnavailable

    server = PostgresServer(Path(tempfile.mkdtemp(prefix="ca-pg-")))
    try:
        server.start()
    except StackUnavailable as exc:
        shutil.rmtree(server.base, ignore_errors=True)
        pytest.skip(str(exc))
    try:
        yield {"uri": server.uri(), "port": server.port}
    finally:
        server.stop()
        shutil.rmtree(server.base, ignore_errors=True)


#: What the S3 test user may do: everything (SQS too: one moto server serves both, for the
#: event-driven ingestion tests), except read objects under ``locked/`` (the "unreadable object"
#: fault: listed, but GetObject is denied).
_S3_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["s3:*", "sqs:*", "iam:*", "sts:*"], "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*/locked/*"},
    ],
}


def s3_client(server: dict[str, Any], *, access_key: str | None = None, secret_key: str | None = None) -> Any:
    """A boto3 S3 client for the test server (the setup's own side channel, not the code under test)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=server["endpoint_url"],
        region_name="us-east-1",
        aws_access_key_id=access_key or server["access_key"],
        aws_secret_access_key=secret_key or server["secret_key"],
    )


def sqs_client(server: dict[str, Any]) -> Any:
    """A boto3 SQS client for the test server (setup side channel): the same moto server and user as S3."""
    import boto3

    return boto3.client(
        "sqs",
        endpoint_url=server["endpoint_url"],
        region_name="us-east-1",
        aws_access_key_id=server["access_key"],
        aws_secret_access_key=server["secret_key"],
    )


def s3_connection_json(server: dict[str, Any], *, access_key: str | None = None, secret_key: str | None = None) -> str:
    """The Airflow Connection of the test server, as ``AIRFLOW_CONN_<ID>`` JSON (``conn_type: aws``)."""
    return json.dumps(
        {
            "conn_type": "aws",
            "login": access_key or server["access_key"],
            "password": secret_key or server["secret_key"],
            "extra": {"endpoint_url": server["endpoint_url"], "region_name": "us-east-1"},
        }
    )


@contextmanager
def s3_server() -> Iterator[dict[str, Any]]:
    """An S3 API on 127.0.0.1 (moto server): yields ``{"endpoint_url", "port", "access_key", "secret_key"}``.

    The keys belong to an IAM user made at start; after that moto authenticates every request,
    so any other key is refused (``InvalidAccessKeyId``) and ``GetObject`` under ``*/locked/*`` is
    denied (``AccessDenied``).
    """
    import boto3

    port = free_port()
    log_fd, log_path = tempfile.mkstemp(prefix="ca-moto-", suffix=".log")
    log = os.fdopen(log_fd, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "MOTO_CALL_RESET_API": "false"},
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"moto server did not start on {endpoint}: {Path(log_path).read_text()[-2000:]}")
                time.sleep(0.2)
        iam = boto3.client(
            "iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup"
        )
        iam.create_user(UserName="contract-assets-test")
        iam.put_user_policy(
            UserName="contract-assets-test", PolicyName="test", PolicyDocument=json.dumps(_S3_POLICY)
        )
        key = iam.create_access_key(UserName="contract-assets-test")["AccessKey"]
        request = urllib.request.Request(
            f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=10):
            pass
        yield {
            "endpoint_url": endpoint,
            "port": port,
            "access_key": key["AccessKeyId"],
            "secret_key": key["SecretAccessKey"],
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
        os.unlink(log_path)
