"""`prunecheck mcp` over the real protocol: the server as a subprocess, the SDK's client over stdio (once over HTTP)."""

import asyncio
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time

import jsonschema
import pytest

from prunecheck import cli
from prunecheck.checker.commands.mcp_language import vocabulary
from prunecheck.spec.policy import AGGREGATES, ARITH_OPS, ATTRS
from prunecheck.checker.commands.mcp_pool import Pool
from prunecheck.checker.commands.mcp_tools import Limits, bounded_text, file_name
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.operator import operator_for
from prunecheck.checker.language.policy_schema import policy_schema
from prunecheck.checker.language.typecheck import MAX_FILE_BYTES
from prunecheck.checker.outputs.report_schema import report_schema
from prunecheck.spec.errors import PolicySyntaxError

from conftest import EXAMPLES, HOUR, RLIMIT, ROOT

mcp = pytest.importorskip("mcp")

# The server's operator deployment (ADR 0037: never a call's): records in the window, evidence kept.
OPERATOR = ROOT / "tests" / "data" / "operator_window_tombstones.yaml"
SERVER = [sys.executable, "-m", "prunecheck", "mcp", "--rlimit", str(RLIMIT), "--time-limit", str(int(HOUR)),
          "--deployment", str(OPERATOR)]
FLAWED = (EXAMPLES / "seed_flawed.yaml").read_text(encoding="utf-8")
# Records and rationale excluded by kind, each tool call kept with its result: every condition holds there.
SAFE = "name: excludes-records\nevict: kind not in ['record', 'rationale'] and idle > 3\npairs: together\n"
TOOLS = {"check", "explain", "repair", "diff", "certify"}
RESOURCES = {"prunecheck://schema/policy", "prunecheck://schema/report", "prunecheck://policy-language"}


@contextlib.asynccontextmanager
async def stdio_client(*extra):
    # The SDK passes the server only a few safe variables: PYTHONPATH too, so it imports the prunecheck under test
    from mcp.client.stdio import get_default_environment
    env = get_default_environment()
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = mcp.StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], *extra], env=env)
    async with mcp.Client(params) as client:
        yield client


def run(scenario):
    return asyncio.run(scenario())


def text_of(result) -> str:
    (content,) = result.content
    return content.text


def report_of(result) -> dict:
    """The one policy report of a check's structured content, after validating the document against its schema."""
    assert not result.is_error, text_of(result)
    jsonschema.validate(result.structured_content, report_schema())
    (report,) = result.structured_content["policies"]
    return report


def cli_error(tmp_path, monkeypatch, name: str, data: bytes) -> str:
    """The one line `prunecheck check NAME` prints for a file NAME holding data."""
    (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert cli.main(["check", name], out, out) == 2
    (line,) = out.getvalue().splitlines()
    return line


def test_every_tool_and_resource_over_stdio():
    """The issue's loop through the protocol: check the seed's flawed policy, explain its counterexample, repair it,
    check the repair (proved), confirm its certificates, diff the two; and read the schema resources."""
    async def scenario():
        async with stdio_client() as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == TOOLS and all(t.annotations.read_only_hint for t in tools)
            assert {str(r.uri) for r in (await client.list_resources()).resources} == RESOURCES
            schema = await client.read_resource("prunecheck://schema/policy")
            assert json.loads(schema.contents[0].text) == policy_schema()
            report = await client.read_resource("prunecheck://schema/report")
            assert json.loads(report.contents[0].text) == report_schema()
            language = json.loads((await client.read_resource("prunecheck://policy-language")).contents[0].text)
            assert language["schema"] == policy_schema() and language["vocabulary"] == vocabulary()
            flawed = report_of(await client.call_tool("check", {"policy": FLAWED, "name": "seed_flawed.yaml"}))
            c1 = flawed["conditions"]["C1"]
            assert flawed["verdict"] == c1["verdict"] == "violated" and c1["explanation"]["cause"]["points"]
            explained = await client.call_tool("explain", {"policy": FLAWED, "name": "seed_flawed.yaml",
                                                           "condition": "C1", "trace": c1["trace"]})
            assert not explained.is_error and explained.structured_content["cause"] == c1["explanation"]["cause"]
            assert "seed_flawed.yaml:6:" in text_of(explained)
            repaired = await client.call_tool("repair", {"policy": FLAWED, "name": "seed_flawed.yaml"})
            assert repaired.structured_content["status"] == "repaired", text_of(repaired)
            text = repaired.structured_content["text"]
            proved = report_of(await client.call_tool("check", {"policy": text, "name": "repaired.yaml"}))
            assert proved["verdict"] == "holds"
            certificates = [c["certificate"] for c in proved["conditions"].values()]
            certified = await client.call_tool("certify", {"certificates": certificates, "policy": text,
                                                           "name": "repaired.yaml"})
            assert certified.structured_content["confirmed"], text_of(certified)
            assert {c["status"] for c in certified.structured_content["certificates"]} == {"confirmed"}
            # 4 spans: the safe design's compaction writes a ledger entry (evidence: on) beside the span and its
            # edit's record and rationale
            diff = await client.call_tool("diff", {"old": FLAWED, "new": SAFE, "depth": 3, "spans": 4})
            assert diff.structured_content["outcome"] == "different", text_of(diff)
    run(scenario)


def test_bad_inputs_are_tool_errors_with_the_clis_line_and_the_server_keeps_serving(tmp_path, monkeypatch):
    malformed = b"name: x\nevict: kind ==\n"
    oversized = b"name: x\nevict: true\n" + b"#" * MAX_FILE_BYTES + b"\n"
    expected = [cli_error(tmp_path, monkeypatch, "bad.yaml", malformed),
                cli_error(tmp_path, monkeypatch, "big.yaml", oversized)]
    assert "bad.yaml:2:" in expected[0] and "too large" in expected[1]
    marker = tmp_path / "executed"

    async def scenario():
        async with stdio_client() as client:
            answers = []
            for name, data in (("bad.yaml", malformed), ("big.yaml", oversized)):
                result = await client.call_tool("check", {"policy": data.decode(), "name": name})
                answers.append((result.is_error, text_of(result)))
            over = await client.call_tool("check", {"policy": SAFE, "depth": Limits().depth + 1})
            assert over.is_error and "this server's limit" in text_of(over)
            typed = await client.call_tool("check", {"policy": 3})
            assert typed.is_error
            code = f"import os\nos.system('touch {marker}')\ndef evict(span, window):\n    return True\n"
            evil = await client.call_tool("check", {"policy": code, "name": "evil.py"})
            assert evil.is_error and text_of(evil).startswith("prunecheck: error: evil.py:1:1: ")
            forged = await client.call_tool("certify", {"certificates": [{"format": "forged"}]})
            assert forged.structured_content["certificates"][0]["status"] == "rejected"
            bogus = await client.call_tool("explain", {"policy": SAFE, "condition": "C1",
                                                       "trace": [{"action": "shell", "args": {"cmd": "rm"}}]})
            assert bogus.is_error and "unknown action 'shell'" in text_of(bogus)
            harmless = await client.call_tool("explain", {"policy": SAFE, "condition": "C1", "trace": [
                {"action": "append", "args": {"kind": "message", "tokens": 1}}]})
            assert harmless.is_error and "does not violate C1" in text_of(harmless)
            deep = await client.call_tool("certify", {"certificates": ["[" * 100_000]})
            assert deep.is_error and text_of(deep) == ("prunecheck: error: certificate[0]:1:1: certificate is not "
                                                       "JSON: nested too deeply")
            still = report_of(await client.call_tool("check", {"policy": SAFE, "only": ["C1"]}))
            return answers, still
    answers, still = run(scenario)
    assert answers == [(True, line) for line in expected]
    assert not marker.exists(), "a policy was executed"
    assert still["verdict"] == "holds"


def test_a_check_beyond_the_per_call_rlimit_is_unknown():
    """The call's rlimit (not seconds) stops every query: each condition comes back unknown, the server serves on."""
    async def scenario():
        async with stdio_client() as client:
            starved = report_of(await client.call_tool("check", {"policy": FLAWED, "rlimit": 1000}))
            fed = report_of(await client.call_tool("check", {"policy": FLAWED, "only": ["C1"]}))
            return starved, fed
    starved, fed = run(scenario)
    assert {c["verdict"] for c in starved["conditions"].values()} == {"unknown"}
    assert starved["verdict"] == "unknown" and fed["verdict"] == "violated"


def test_ten_concurrent_calls_each_get_their_own_answer():
    policies = sorted(EXAMPLES.glob("*.yaml"))[:5] * 2
    expected = [parse_policy_text(p.read_text(encoding="utf-8"), p.name).name for p in policies]

    async def scenario():
        async with stdio_client("--workers", "2") as client:
            calls = [client.call_tool("check", {"policy": p.read_text(encoding="utf-8"), "name": p.name,
                                                "only": ["C1"], "depth": 3, "spans": 3, "prove": False})
                     for p in policies]
            return await asyncio.gather(*calls)
    results = run(scenario)
    assert [report_of(r)["policy"] for r in results] == expected
    assert [report_of(r)["source"] for r in results] == [p.name for p in policies]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_server_over_streamable_http_on_loopback():
    port = free_port()
    server = subprocess.Popen([*SERVER, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # a hang guard only: the server's start-up
        while time.monotonic() < deadline and server.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)

        async def scenario():
            async with mcp.Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                return report_of(await client.call_tool("check", {"policy": FLAWED, "only": ["C1"]}))
        assert run(scenario)["conditions"]["C1"]["verdict"] == "violated"
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_the_agent_loop_reaches_a_proved_policy_in_three_rounds():
    """examples/agent_loop: two drafts refuted with their explanations fed back, the third proved and confirmed."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop" / "agent_loop.py"), *SERVER[4:8]],
                          capture_output=True, text=True, timeout=HOUR)
    lines = done.stdout.splitlines()
    rounds = [i for i, line in enumerate(lines) if line.startswith("round ")]
    assert done.returncode == 0 and len(rounds) == 3, done.stdout + done.stderr
    first, second, third = (lines[i:j] for i, j in zip(rounds, [*rounds[1:], len(lines)]))
    for refuted, name in ((first, "draft1.yaml"), (second, "draft2.yaml")):
        assert ": violated (" in refuted[1] and refuted[2].startswith("  feedback to the model (")
        assert any(f"{name}:" in line and "records: window" in line for line in refuted), refuted
    assert ": holds (" in third[1]
    assert third[2].startswith("  certify: ") and set(third[2].split(": ", 1)[1].split(", ")) == {
        f"{condition} confirmed" for condition in listed_conditions(third[1])}
    assert third[-1].startswith("accepted draft3.yaml after 3 rounds")


def listed_conditions(check_line: str) -> list:
    """The conditions a transcript's check line lists: `policy NAME: VERDICT (C1 holds, C2 holds, ...)`."""
    return [part.split()[0] for part in check_line.split("(", 1)[1].rstrip(")").split(", ")]


# --- the pieces, in process ------------------------------------------------------------------------------------------

def test_a_call_past_its_time_limit_is_stopped_and_its_worker_replaced():
    """A call that never ends (whatever the load) is killed at the limit and answered with a tool error; the next
    call gets a fresh worker."""
    pool = Pool(1)
    try:
        status, line, _ = pool.run(time.sleep, (HOUR,), 0.5)
        assert status == "error" and "exceeded this server's limit of 0.5 s" in line
        operator = operator_for(None, deployment=str(OPERATOR), no_config=True)
        status, summary, _ = pool.call("check", Limits(rlimit=RLIMIT, operator=operator), {"policy": SAFE,
                                                                                            "only": ["C1"]})
        assert (status, summary.split(":")[1]) == ("ok", " holds (C1 holds)")
    finally:
        pool.close()


def test_every_vocabulary_example_is_a_policy_the_loader_accepts():
    words = vocabulary()
    base = {"name": "example", "evict": "kind == 'message'"}
    sections = ("keys", "span_attributes", "window_attributes", "trigger_attributes", "operators", "aggregates",
                "deployment")
    examples = [(section, word, entry["example"]) for section in sections for word, entry in words[section].items()]
    for section, word, fragment in examples:
        over = {k: v for k, v in base.items() if not (k == "evict" and "compaction" in fragment)}  # stages hold it
        assert parse_policy_text(json.dumps({**over, **fragment}), "example.json"), (section, word)
    assert {w for s, w, _ in examples if s == "keys"} == set(policy_schema()["properties"])
    # every operator and function of the language has its entry (CALLABLE: functions and aggregates)
    assert {w for s, w, _ in examples if s == "aggregates"} == set(AGGREGATES)
    assert {w for s, w, _ in examples if s.endswith("attributes")} == set(ATTRS)
    assert set(ARITH_OPS) <= set(" ".join(words["operators"]).split())


@pytest.mark.parametrize("name", ["../policy.yaml", "/etc/passwd.yaml", "policy.txt", "", "a" * 70 + ".yaml"])
def test_a_policy_name_is_a_plain_file_name_with_a_form(name):
    with pytest.raises(PolicySyntaxError):
        file_name(name)


def test_a_lone_surrogate_is_refused_as_the_loader_refuses_the_bytes_of_a_file():
    with pytest.raises(PolicySyntaxError, match="not valid UTF-8"):
        bounded_text("name: x\nevict: true # \ud800\n", "p.yaml")
