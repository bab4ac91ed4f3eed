"""`prunecheck graph`: a counterexample trace written by `check --out`, replayed and drawn as its edit/record graph."""

from __future__ import annotations

from pathlib import Path

from prunecheck.spec.errors import ReplayMismatch, TraceFormatError
from prunecheck.spec.actions import real_steps

from prunecheck.checker.engines.replay import replay
from prunecheck.checker.findings.graph import FORMATS, RenderError, edit_graph, graph_dot, graph_title, picture
from prunecheck.checker.outputs.itf import read_trace_file
from prunecheck.checker.outputs.paths import write_whole
from prunecheck.checker.result import counted, length_text


def trace_run(path) -> tuple:
    """(policy, condition, transitions) for an ITF trace written by `prunecheck check --out`, replayed."""
    _document, info, policy, actions = read_trace_file(path)
    spans = info.get("spans")
    try:
        transitions = replay(policy, actions, spans if isinstance(spans, int) else None)
    except ReplayMismatch as exc:
        raise TraceFormatError(f"{path}: trace does not replay on the runtime: {exc.one_line()}") from None
    condition = info.get("condition")
    return policy, condition if isinstance(condition, str) else "?", transitions


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("graph", help="draw a counterexample trace's edit/record graph")
    parser.add_argument("trace", metavar="TRACE.itf.json", help="a trace written by `prunecheck check --out DIR`")
    parser.add_argument("--out", required=True, metavar="FILE", help="FILE.svg, FILE.png or FILE.dot")


def run(args, stdout, stderr) -> int:
    fmt = Path(args.out).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise RenderError(f"cannot write {args.out!r}: the output name must end in .svg, .png or .dot")
    policy, condition, transitions = trace_run(args.trace)
    graph = edit_graph(policy, transitions)
    real = real_steps(t.action for t in transitions)
    data = picture(graph_dot(graph, graph_title(policy.name, condition, len(transitions), real)), fmt)
    try:
        write_whole(args.out, data)
    except OSError as exc:
        raise RenderError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    gone = sum(1 for _, a in graph.nodes(data=True) if a["node"] == "span" and not a["alive"])
    edits = sum(1 for _, a in graph.nodes(data=True) if a["node"] == "edit")
    spans = counted(graph.number_of_nodes() - edits, "span")
    print(f"wrote {args.out}: {length_text(len(transitions), real)}, {spans} ({gone} gone at the end), "
          f"{counted(edits, 'edit')}", file=stdout)
    return 0
