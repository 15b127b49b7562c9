"""The live API against its own /openapi.json.

schemathesis (its command line, as ``st run``) runs every operation through its coverage
phase (boundary and invalid values, methods the path does not take, requests without the
key), its fuzzing phase and its stateful phase, with every check it has but one: among them,
that each response's status is one the document lists for the operation, that a response
matches its schema, that invalid input is refused, and that a 405 names the methods of its
path. Left out: that every schema-valid request is accepted — a 422 for a request that
breaks a rule across fields (Mem0's "a user_id or an agent_id") is correct.

FUZZ_MAX_EXAMPLES (default 15) sets the fuzzed cases per operation and FUZZ_SEED (default 1)
the seed: ``make fuzz`` runs a longer pass on a new seed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.system.live_api import Server

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "15"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))


# A body over 8 MiB (10,001 events) is refused with 413 before it is read: a refusal of
# invalid input like the statuses schemathesis expects by default.
CONFIG = """
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422",
                     "428", "429", "5xx"]
"""


def test_every_operation_answers_as_its_document_says(server: Server, tmp_path: Path) -> None:
    report, config = tmp_path / "schemathesis.json", tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    run = subprocess.run(
        [
            *(sys.executable, "-m", "schemathesis.cli", "--no-color"),
            *("--config-file", str(config), "run"),
            f"{server.url}/openapi.json",
            *("--header", f"Authorization: Bearer {server.key('tenant-s')}"),
            *("--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED)),
            *("--exclude-checks", "positive_data_acceptance"),
            *("--report", "json", "--report-json-path", str(report)),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=tmp_path,  # where it keeps its cache
    )
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    figures = json.loads(report.read_text())
    operations, cases = figures["operations"], figures["test_cases"]
    print(
        f"\nschemathesis (seed {SEED}): {operations['tested']} operations,"
        f" {cases['generated']} cases, {cases['unique_failures']} failures"
    )  # shown with -s
    found = json.dumps(figures["failures"] + figures["errors"])
    assert not figures["failures"] and not figures["errors"], f"{found}\n{run.stdout[-4000:]}"
    assert operations["tested"] == operations["total"] >= 28
    assert run.returncode == 0, run.stdout[-3000:]


def test_a_method_the_path_does_not_take_is_answered_405_naming_those_it_takes(
    server: Server,
) -> None:
    for method, path, allowed in [
        ("OPTIONS", "/v1/entries/1", "DELETE, GET, PUT"),
        ("PATCH", "/v1/memories/0/", "DELETE, GET, PUT"),
        ("GET", "/v1/search", "POST"),
        ("PUT", "/v1/memories/0%2Fhistory/", "GET"),  # a memory id holding '/'
    ]:
        response = httpx.request(method, f"{server.url}{path}")
        assert response.status_code == 405, (method, path)
        assert response.headers["allow"] == allowed, (method, path)
        assert response.json()["error"] == "MethodNotAllowed"


def test_a_boolean_or_a_number_takes_its_json_type_only(server: Server) -> None:
    headers = {"Authorization": f"Bearer {server.key('tenant-s')}"}

    def search(**fields: Any) -> httpx.Response:
        body = {"query": "tea", **fields}
        return httpx.post(f"{server.url}/v1/search", json=body, headers=headers)

    for refused in ({"history": 0}, {"history": "true"}, {"limit": "5"}, {"until": 0}):
        response = search(**refused)
        assert response.status_code == 422, refused
        assert response.json()["fields"]["field"] == f"body.{next(iter(refused))}"
    assert search(history=True, limit=5, until="2030-01-01T00:00:00Z").status_code == 200


def test_the_document_declares_the_bearer_key_and_every_error_status(server: Server) -> None:
    document = httpx.get(f"{server.url}/openapi.json").json()
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    keyed = 0
    for path, operations in document["paths"].items():
        for operation in operations.values():
            statuses = set(operation["responses"])
            if path in ("/healthz", "/readyz", "/metrics"):
                assert "security" not in operation
                continue
            keyed += 1
            assert operation["security"] == [{"bearer": []}]
            assert {"401", "503"} <= statuses
            assert operation["responses"]["503"]["headers"]["Retry-After"]["required"]
            if "requestBody" in operation:
                assert {"400", "413", "422"} <= statuses
    assert keyed >= 25
    assert "429" in document["paths"]["/v1/maintenance/{job}"]["post"]["responses"]


def test_the_id_pattern_means_the_same_in_every_regular_expression_engine(
    server: Server,
) -> None:
    """The id pattern names its whitespace character by character: ``\\s`` is another set
    in JSON Schema's ECMA-262 expressions (with U+FEFF, without U+0085) than in Python's.
    It refuses at either end exactly what str.strip() removes (read whole, as ECMA-262's
    ``$`` is the end: Python's also matches before a last newline)."""
    document = httpx.get(f"{server.url}/openapi.json").json()
    (path_id,) = document["paths"]["/v1/users/{user_id}/profile"]["get"]["parameters"]
    pattern = path_id["schema"]["pattern"]
    assert not re.search(r"\\[sSdDwWbB]", pattern)  # no class whose meaning differs
    ecma_space = "\t\n\v\f\r \xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
    id_re = re.compile(pattern)
    for c in {*ecma_space, *(chr(i) for i in range(0x3001) if chr(i).isspace())}:
        for value in (f"{c}id", f"id{c}"):
            assert (id_re.fullmatch(value) is not None) == (value == value.strip()), hex(ord(c))
