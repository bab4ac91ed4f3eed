"""The edit/record graph of a replayed counterexample (networkx), its DOT text, and its pictures via Graphviz `dot`."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from typing import TYPE_CHECKING, Optional, Sequence

from prunecheck.spec.errors import PrunecheckError
from prunecheck.spec.conditions import CHANGES_TARGET
from prunecheck.spec.runtime import Transition, is_candidate, status
from prunecheck.spec.actions import action_text

from prunecheck.checker.result import length_text

if TYPE_CHECKING:
    import networkx as nx

FORMATS = ("dot", "svg", "png")
DOT_TIMEOUT = 60.0
FILL = {"content": "#dbe9f6", "record": "#fce8b2", "rationale": "#d9f0d3", "edit": "#ffffff"}
GONE = "#e6e6e6"
ROLE_NAMES = {"content": "content span", "record": "recovery record", "rationale": "rationale"}
PNG_DPI = 192  # Graphviz's 72 would draw the examples 600 px wide, too small to read
EDGE_STYLE = {"target": 'color="#333333", label="edits"',
              "record": 'color="#b8860b", penwidth=1.6, label="records"',
              "rationale": 'color="#2e7d32", style=dashed, label="explains"'}


class RenderError(PrunecheckError):
    """A picture could not be produced: unsupported output format, or Graphviz failed."""


class GraphvizMissing(RenderError):
    """The Graphviz `dot` binary is not installed, so only .dot output is possible."""


def span_node(span_id: int) -> str:
    return f"s{span_id}"


def edit_node(edit_id: int) -> str:
    return f"e{edit_id}"


def _role(kind: str) -> str:
    return kind if kind in ("record", "rationale") else "content"


def edit_graph(policy, transitions: Sequence[Transition]) -> "nx.DiGraph":
    """Spans and edits of a run as nodes; edges edit→target, record→edit, rationale→edit; steps are 1-based.

    Span nodes: node="span", span, kind (at creation), final_kind, role (content/record/rationale), namespace,
    tokens, created (the clock), step (the step that created it), candidate (first step that left it a compaction
    candidate of the policy, or None), evicted /
    truncated (first step that removed it, or None), restored (last undo that brought it back, or None), alive (at
    the end). Edit nodes: node="edit", edit (= its record's id), number (1 for the run's first edit, 2, ...: what
    its label calls it), mode, target, record,
    rationale, step, undone (step of the revert, or None), stale_revert (that step if the target had been re-edited
    since the record was taken, else None), undo_attempts ((step, outcome), ...), record_lost (first step that ended
    with the edit live and its record dead, or None). graph.graph["steps"] holds, per step, a dict
    with action, outcome, evicted and truncated (sorted span ids), clock: the (first, last) real step it stands
    for, which differ for a read or audit repeated n times, and status: the closure status the audit reports after
    it (what C4 reads), None before the first edit."""
    import networkx as nx  # imported here: it costs a fifth of a second of every command's start-up

    graph = nx.DiGraph()
    steps = []
    for index, t in enumerate(transitions, start=1):
        for span in t.after.spans[len(t.before.spans):]:
            graph.add_node(span_node(span.id), node="span", span=span.id, kind=span.kind, final_kind=span.kind,
                           role=_role(span.kind), namespace=span.namespace, tokens=span.tokens, created=span.created,
                           step=index, candidate=None, evicted=None, truncated=None, restored=None, alive=True)
        for number, info in enumerate(t.after.edits[len(t.before.edits):], start=len(t.before.edits) + 1):
            name = edit_node(info.record)
            graph.add_node(name, node="edit", edit=info.record, number=number, mode=info.mode, target=info.target,
                           record=info.record, rationale=info.rationale, step=index, undone=None,
                           stale_revert=None, undo_attempts=(), record_lost=None)
            graph.add_edge(name, span_node(info.target), rel="target", step=index)
            graph.add_edge(span_node(info.record), name, rel="record", step=index)
            graph.add_edge(span_node(info.rationale), name, rel="rationale", step=index)
        for how, removed in (("evicted", t.evicted), ("truncated", t.truncated)):
            for span_id in removed:
                attrs = graph.nodes[span_node(span_id)]
                if attrs[how] is None:
                    attrs[how] = index
        if t.action.name == "undo":
            attrs = graph.nodes[edit_node(t.action.edit)]
            attrs["undo_attempts"] += ((index, t.outcome),)
            if t.outcome in CHANGES_TARGET:  # reverted, or merged or reconstructed (spec/SPEC.md §4e)
                attrs["undone"] = index
                if t.outcome == "reverted" and \
                        t.before.span(attrs["target"]).version != t.before.edit(t.action.edit).version:
                    attrs["stale_revert"] = index
                target = graph.nodes[span_node(attrs["target"])]
                if not t.before.span(attrs["target"]).alive:
                    target["restored"] = index
        for span in t.after.spans:
            attrs = graph.nodes[span_node(span.id)]
            attrs["alive"], attrs["final_kind"] = span.alive, span.kind
            if attrs["candidate"] is None and is_candidate(policy, t.after, span):
                attrs["candidate"] = index
        for info in t.after.live_edits():
            attrs = graph.nodes[edit_node(info.record)]
            if attrs["record_lost"] is None and not t.after.span(info.record).alive:
                attrs["record_lost"] = index
        steps.append(_step_record(policy, t))
    graph.graph["steps"] = tuple(steps)
    return graph


def _step_record(policy, t: Transition) -> dict:
    return {"action": action_text(t.action), "outcome": t.outcome, "evicted": tuple(sorted(t.evicted)),
            "truncated": tuple(sorted(t.truncated)), "clock": (t.before.step + 1, t.after.step),
            "status": status(policy, t.after) if t.after.edits else None}


def dot_string(text: str) -> str:
    """text as a quoted DOT string that Graphviz shows literally: no escape sequences, entities or control chars."""
    out = []
    for ch in str(text):
        if ch == "\n":
            out.append("\\n")
        elif ch in '"\\':
            out.append("\\" + ch)
        elif ch == "&":
            out.append("&amp;")  # Graphviz decodes HTML entities inside labels
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(f"\\\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _span_label(attrs: dict) -> str:
    kind = attrs["kind"] if attrs["final_kind"] == attrs["kind"] else f"{attrs['kind']} → {attrs['final_kind']}"
    lines = [f"#{attrs['span']} {kind}", f"{attrs['namespace']}, {attrs['tokens']} tok"]
    shown = ("candidate", "evicted", "truncated", "restored") if attrs["role"] != "content" else \
        ("evicted", "truncated", "restored")  # content spans are meant to be candidates
    for how in shown:
        if attrs[how] is not None:
            lines.append(f"{how} @{attrs[how]}")
    return "\n".join(lines)


def _edit_label(attrs: dict) -> str:
    lines = [f"edit {attrs['number']}", f"{attrs['mode']} #{attrs['target']}"]
    if attrs["record_lost"] is not None:
        lines.append(f"record lost @{attrs['record_lost']}")
    for at, outcome in attrs["undo_attempts"]:
        stale = ", target re-edited" if at == attrs["stale_revert"] else ""
        lines.append(f"undo @{at}: {outcome}{stale}")
    return "\n".join(lines)


def _node_style(attrs: dict) -> tuple:
    """(DOT attributes, what they mean): the look of a node, which the legend repeats exactly."""
    red = ("color", "#d62728"), ("penwidth", "2")
    if attrs["node"] == "edit":
        flagged = attrs["record_lost"] is not None or attrs["stale_revert"] is not None
        look = (("shape", "box"), ("style", "rounded,filled"), ("fillcolor", FILL["edit"])) + (red if flagged else ())
        return look, "edit\nrecord lost or stale revert" if flagged else "edit"
    removed = attrs["evicted"] is not None or attrs["truncated"] is not None
    look = (("shape", "box" if attrs["role"] == "content" else "note"),
            ("style", "filled,dashed" if removed else "filled"),
            ("fillcolor", FILL[attrs["role"]] if attrs["alive"] else GONE)) + (red if removed else ())
    if not attrs["alive"]:
        look += (("fontcolor", "#666666"),)
    meaning = ROLE_NAMES[attrs["role"]] + ("\nevicted or truncated" if removed else "")
    return look, meaning + ("" if attrs["alive"] else "\ngone at the end")


def _attributes(look: tuple) -> str:
    return ", ".join(f"{key}={dot_string(value)}" for key, value in look)


def _node_line(name: str, attrs: dict, id_prefix: str) -> str:
    classes = [attrs["node"]]
    if attrs["node"] == "span":
        classes.append(attrs["role"])
        if attrs["candidate"] is not None:
            classes.append("candidate")
        classes += [how for how in ("evicted", "truncated") if attrs[how] is not None]
        if not attrs["alive"]:
            classes.append("gone")
        label = _span_label(attrs)
    else:
        classes.append("lost" if attrs["record_lost"] is not None else "kept")
        if attrs["stale_revert"] is not None:
            classes.append("stale")
        label = _edit_label(attrs)
    return (f"  {name} [id={dot_string(id_prefix + name)}, class={dot_string(' '.join(classes))}, "
            f"{_attributes(_node_style(attrs)[0])}, label={dot_string(label)}];")


def _legend_lines(graph: "nx.DiGraph", id_prefix: str, after: str) -> list:
    """A legend cluster right of the last step: one node per look used in the drawing, drawn with that look."""
    looks = {}
    for _, attrs in sorted(graph.nodes(data=True), key=lambda node: (node[0][0] == "e", int(node[0][1:]))):
        look, meaning = _node_style(attrs)
        looks.setdefault(look, meaning)
    names = [f"legend{i}" for i in range(len(looks))]
    lines = ['  subgraph cluster_legend { label="legend"; fontsize=10; style="rounded"; color="#999999";']
    for name, (look, meaning) in zip(names, looks.items()):
        lines.append(f"    {name} [id={dot_string(id_prefix + name)}, class=\"legend\", {_attributes(look)}, "
                     f"label={dot_string(meaning)}];")
    lines.append(f"    {{ rank=same; {'; '.join(names)}; }}")
    lines.append("  }")
    if names and after:
        lines.append(f"  {after} -> {names[0]} [style=invis, constraint=true];")
    return lines


def _step_label(index: int, step: dict, show_status: bool = False) -> str:
    lines = [f"step {index}", step["action"]]
    first, last = step["clock"]
    if first != last:
        lines.append(f"steps {first}-{last}")
    if step["outcome"] != "ok":
        lines.append(f"→ {step['outcome']}")
    for how in ("evicted", "truncated"):
        if step[how]:
            lines.append(f"{how} " + ", ".join(f"#{i}" for i in step[how]))
    if show_status:
        lines.append(f"status: {step['status']}")
    return "\n".join(lines)


def graph_dot(graph: "nx.DiGraph", title: str = "", id_prefix: str = "", legend: bool = True) -> str:
    """DOT text (written directly, no pydot) for an edit_graph: one column per step, left to right.

    Each step has a header node (its action) and shares `rank=same` with the nodes it created; edit edges do not
    constrain the layout. Node ids in SVG output are id_prefix + s<span> / e<edit>, with classes such as
    "span record evicted gone" for styling and tests. With `legend`, a cluster right of the last step holds one
    node per look the drawing uses, drawn with exactly that look and saying what it means."""
    steps = graph.graph.get("steps", ())
    lines = [
        "digraph trace {",
        # pad: a margin, so that the thick borders of nodes on the edge are not cut off
        f"  graph [rankdir=LR, nodesep=0.2, ranksep=0.35, pad=0.25, fontname=\"Helvetica\", fontsize=11, labelloc=t, "
        f"label={dot_string(title)}];",
        '  node [fontname="Helvetica", fontsize=10, penwidth=1.2, margin="0.08,0.04"];',
        '  edge [fontname="Helvetica", fontsize=8, arrowsize=0.7, constraint=false];',
    ]
    by_step = {index: [] for index in range(1, len(steps) + 1)}
    for name, attrs in graph.nodes(data=True):
        by_step.setdefault(attrs["step"], []).append(name)
        lines.append(_node_line(name, attrs, id_prefix))
    shown = _status_shown(steps)
    for index in sorted(by_step):
        head = f"t{index}"
        text = _step_label(index, steps[index - 1], shown[index - 1]) if index <= len(steps) else f"step {index}"
        lines.append(f"  {head} [id={dot_string(id_prefix + head)}, class=\"step\", shape=plaintext, "
                     f"fontsize=9, label={dot_string(text)}];")
        lines.append(f"  {{ rank=same; {'; '.join([head] + sorted(by_step[index], key=_creation_order))}; }}")
    heads = [f"t{index}" for index in sorted(by_step)]
    for left, right in zip(heads, heads[1:]):
        lines.append(f"  {left} -> {right} [style=invis, constraint=true];")
    for source, target, attrs in graph.edges(data=True):
        lines.append(f"  {source} -> {target} [class={dot_string(attrs['rel'])}, {EDGE_STYLE[attrs['rel']]}];")
    if legend and graph.number_of_nodes():
        lines.extend(_legend_lines(graph, id_prefix, heads[-1] if heads else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _status_shown(steps) -> list:
    """Per step, whether its header shows the closure status: once there is an edit, where the status changes and
    at the last step (where C4's violation is: 'reversible' with a record gone)."""
    shown, before = [], None
    for index, step in enumerate(steps):
        now = step.get("status")
        shown.append(now is not None and (now != before or index == len(steps) - 1))
        before = now
    return shown


def _creation_order(name: str):
    return (name[0] != "e", int(name[1:]))


def picture(dot_text: str, fmt: str, binary: str = "dot", timeout: float = DOT_TIMEOUT) -> bytes:
    """The graph in format fmt (dot, svg or png); svg and png need the Graphviz binary."""
    if fmt not in FORMATS:
        raise RenderError(f"unsupported picture format {fmt!r}: use .svg, .png or .dot")
    if fmt == "dot":
        return dot_text.encode("utf-8")
    path = shutil.which(binary)
    if path is None:
        raise GraphvizMissing(f"cannot write .{fmt}: the Graphviz '{binary}' binary is not installed "
                              "(install graphviz, or write .dot)")
    try:
        scale = [f"-Gdpi={PNG_DPI}"] if fmt == "png" else []
        done = subprocess.run([path, f"-T{fmt}", *scale], input=dot_text.encode("utf-8"), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz '{binary}' did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise GraphvizMissing(f"cannot run the Graphviz '{binary}' binary: {exc}") from None
    if done.returncode != 0 or not done.stdout:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError(f"Graphviz '{binary}' failed (exit {done.returncode}): {why[0] if why else 'no output'}")
    return done.stdout


def graph_title(policy_name: str, condition: str, steps: int, real: Optional[int] = None) -> str:
    """The picture's title; `real` is the number of real steps when some step is a repeated read or audit."""
    return f"policy {policy_name}: counterexample to {condition}, {length_text(steps, steps if real is None else real)}"
