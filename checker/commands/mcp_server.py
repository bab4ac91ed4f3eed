"""The `mcp` command: prunecheck's API as an MCP server (stdio, or streamable HTTP on 127.0.0.1): tools, resources."""

import json  # no `from __future__ import annotations`: the SDK reads the tools' annotations as objects
from typing import Any, Optional

from prunecheck.version import __version__
from prunecheck.spec.errors import Interrupted
from prunecheck.symbolic.interrupts import stop_if_interrupted, stopping

from prunecheck.checker.commands.mcp_tools import Limits, precheck
from prunecheck.checker.options import MAX_SPANS

SCHEMA_URI = "prunecheck://schema/policy"
REPORT_SCHEMA_URI = "prunecheck://schema/report"
LANGUAGE_URI = "prunecheck://policy-language"
INSTRUCTIONS = (
    "Vet a context-pruning policy before it is deployed. Read prunecheck://policy-language (the policy JSON Schema and "
    "the vocabulary, one example each), write a policy as YAML, JSON or restricted-Python text, then call `check`: "
    "each condition is `violated` (with a replayed counterexample and its explanation), `holds` (with a proof "
    "certificate; `certify` re-checks them with cvc5) or `unknown`. `explain` explains a counterexample, `repair` "
    "proposes the proved change that keeps most of the policy's intent, `diff` compares two policies. Policies are "
    "parsed, never executed.")
Deployment = Optional[dict[str, str]]
IGNORED = ("; `deployment` is ignored: the deployment is the server operator's (`prunecheck mcp --deployment/--config`), "
           "never a call's; keys given here are named in the report's deployment_basis claims, not used")


def tool_result(answer: tuple):
    """A CallToolResult from the pool's (status, text, document): structured content, or isError with one line."""
    from mcp.types import CallToolResult, TextContent

    status, text, document = answer
    if status != "ok":
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=document)


def build_server(pool, limits: Limits):
    """The MCPServer: five tools that send their arguments to `pool` within `limits`, and three resources."""
    from mcp.server import MCPServer
    from mcp.types import CallToolResult, ToolAnnotations

    server = MCPServer("prunecheck", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    pure = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)  # reads no file, no net

    def call(tool: str, arguments: dict) -> CallToolResult:
        refused = precheck(tool, arguments)
        return tool_result(("error", refused, None) if refused else pool.call(tool, limits, arguments))

    @server.tool(annotations=pure,
                 description="Check a policy (its text; `name` picks the form: .yaml .yml .json .py) against every "
                             "condition: the `check --format json` document, each counterexample explained" + IGNORED)
    def check(policy: str, name: str = "policy.yaml", deployment: Deployment = None, depth: Optional[int] = None,
              spans: Optional[int] = None, rlimit: Optional[int] = None, only: Optional[list[str]] = None,
              prove: bool = True) -> CallToolResult:
        return call("check", dict(policy=policy, name=name, deployment=deployment, depth=depth, spans=spans,
                                  rlimit=rlimit, only=only, prove=prove))

    @server.tool(annotations=pure,
                 description="Explain a counterexample (`trace`: a condition's `trace` list from check) step by "
                             "step, down to the policy text that causes it" + IGNORED)
    def explain(policy: str, condition: str, trace: list[dict[str, Any]], name: str = "policy.yaml",
                deployment: Deployment = None, spans: Optional[int] = None) -> CallToolResult:
        return call("explain", dict(policy=policy, condition=condition, trace=trace, name=name,
                                    deployment=deployment, spans=spans))

    @server.tool(annotations=pure,
                 description="Propose the proved change to a policy text that keeps most of its intent (`repair "
                             "--format json`: the change, the repaired text and its diff, each condition's proof); "
                             "the text only: the deployment is the server operator's, so `allow_deployment` changes "
                             "nothing")
    def repair(policy: str, name: str = "policy.yaml", allow_deployment: bool = True, depth: Optional[int] = None,
               spans: Optional[int] = None, rlimit: Optional[int] = None) -> CallToolResult:
        return call("repair", dict(policy=policy, name=name, allow_deployment=allow_deployment, depth=depth,
                                   spans=spans, rlimit=rlimit))

    @server.tool(annotations=pure,
                 description="Compare two policies: does one evict, in some reachable state, a span the other "
                             "keeps (`diff --format json`)?")
    def diff(old: str, new: str, old_name: str = "old.yaml", new_name: str = "new.yaml", depth: Optional[int] = None,
             spans: Optional[int] = None, rlimit: Optional[int] = None) -> CallToolResult:
        return call("diff", dict(old=old, new=new, old_name=old_name, new_name=new_name, depth=depth, spans=spans,
                                 rlimit=rlimit))

    @server.tool(annotations=pure,
                 description="Re-check proof certificates (the `certificate` objects of check's report, all of a "
                             "policy's together: they may assume each other) with cvc5; with `policy`, each must be "
                             "for exactly it" + IGNORED)
    def certify(certificates: list[Any], policy: Optional[str] = None, name: str = "policy.yaml",
                deployment: Deployment = None) -> CallToolResult:
        return call("certify", dict(certificates=certificates, policy=policy, name=name, deployment=deployment))

    _add_resources(server)
    return server


def _add_resources(server) -> None:
    from prunecheck.checker.commands.mcp_language import language_document
    from prunecheck.checker.language.policy_schema import policy_schema
    from prunecheck.checker.outputs.report_schema import report_schema

    @server.resource(SCHEMA_URI, name="policy-schema", mime_type="application/schema+json",
                     description="The JSON Schema of a YAML/JSON policy (what `prunecheck schema policy` prints).")
    def schema() -> str:
        return json.dumps(policy_schema(), indent=2)

    @server.resource(REPORT_SCHEMA_URI, name="report-schema", mime_type="application/schema+json",
                     description="The JSON Schema of `check`'s structured content (`prunecheck schema report`).")
    def report() -> str:
        return json.dumps(report_schema(), indent=2)

    @server.resource(LANGUAGE_URI, name="policy-language", mime_type="application/json",
                     description="The policy language: the schema and its vocabulary, one example each.")
    def language() -> str:
        return json.dumps(language_document(), indent=2)


# --------------------------------------------------------------------------- command line

def add_parser(subparsers) -> None:
    from prunecheck.checker.commands.frontdoor import bounded_int

    defaults = Limits()
    p = subparsers.add_parser("mcp", help="serve the checker to agents over MCP (stdio, or HTTP on 127.0.0.1)",
                              description="An MCP server: tools check, explain, repair, diff and certify take policies "
                                          "as text; resources: the policy schema and language. Each call runs in a "
                                          "worker process within the bounds below.")
    p.add_argument("--http", type=bounded_int(1, 65535), metavar="PORT",
                   help="serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio")
    p.add_argument("--workers", type=bounded_int(1, 64), default=2, metavar="N",
                   help="calls checked at once, each in its own worker process (default 2; others wait)")
    p.add_argument("--max-depth", type=bounded_int(0, 200), default=defaults.depth, metavar="K",
                   help=f"the deepest bounded search a call may ask for (default {defaults.depth})")
    p.add_argument("--max-spans", type=bounded_int(2, MAX_SPANS), default=defaults.spans, metavar="N",
                   help=f"the most span slots a call may ask for (default {defaults.spans})")
    p.add_argument("--rlimit", type=bounded_int(1, 10**12), default=defaults.rlimit, metavar="N",
                   help=f"the most solver resource units per query a call may ask for, and its default (default "
                        f"{defaults.rlimit})")
    p.add_argument("--time-limit", type=bounded_int(1, 86400), default=int(defaults.seconds), metavar="S",
                   help=f"seconds per call: a longer call is stopped and answered with a tool error (default "
                        f"{defaults.seconds:g})")
    p.add_argument("--deployment", metavar="FILE",
                   help="the operator's deployment every call is judged under: the keys this YAML/JSON file gives "
                        "over the configuration's (never a call's; keys neither gives: the least-assuming default)")
    p.add_argument("--config", metavar="FILE",
                   help="the operator's configuration (default: the nearest prunecheck.toml or pyproject.toml with "
                        "[tool.prunecheck] at or above the working directory); its trust-policy-deployment is "
                        "ignored here: the calls come from the model under vetting")
    p.add_argument("--no-config", dest="no_config", action="store_true", help="read no configuration file")


def run(args, stdout, stderr) -> int:
    from prunecheck.checker.commands.mcp_pool import Pool

    from dataclasses import replace

    from prunecheck.checker.language.operator import operator_for

    operator = replace(operator_for(None, config=args.config, no_config=args.no_config, deployment=args.deployment),
                       trust_policy_deployment=False)
    limits = Limits(depth=args.max_depth, spans=args.max_spans, rlimit=args.rlimit, seconds=float(args.time_limit),
                    operator=operator)
    pool = Pool(args.workers)
    server = build_server(pool, limits)
    # A signal kills the workers (their calls end) and leaves the event loop; this process runs no z3 itself.
    try:
        with stopping(pool.kill):
            if args.http is None:
                server.run("stdio")
            else:
                print(f"prunecheck mcp: serving http://127.0.0.1:{args.http}/mcp", file=stderr, flush=True)
                server.run("streamable-http", host="127.0.0.1", port=args.http)
    except KeyboardInterrupt:
        raise Interrupted("the server was interrupted") from None
    finally:
        pool.close()
    stop_if_interrupted()  # a signal the event loop absorbed (uvicorn's own handler re-raises it as it stops)
    return 0


__all__ = ["build_server", "tool_result", "add_parser", "run", "SCHEMA_URI", "REPORT_SCHEMA_URI", "LANGUAGE_URI"]
