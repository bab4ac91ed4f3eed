"""The edit/record picture: a legend of exactly the node looks drawn, a readable PNG, nothing cut off at the edge."""

from __future__ import annotations

import re
import shutil
import struct
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.findings.graph import edit_graph, graph_dot, picture
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.engines.replay import replay
from prunecheck.spec.runtime import Append, Compact, Edit, Undo

from conftest import BOUNDS, EXAMPLES

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz `dot` is not installed (install graphviz to draw pictures)")
LOOK_KEYS = ("shape", "style", "fillcolor", "color", "penwidth", "fontcolor")
NODE = re.compile(r'^\s*(\w+) \[id="[^"]*", class="([^"]*)", (.*)\];$', re.M)
MIN_WIDTH = 1200  # px: the examples' pictures must be readable without zooming in


def first_seed(policy):
    """The policy under the first seed's deployment: the pictures are of its counterexamples and runs (a destroy's
    record as large as its target, so the budget truncates it); test_graph_html.py draws the seed's M1 and J1 too."""
    return replace(policy, deployment=replace(policy.deployment, evidence="off", destroy_record="verbatim"))


def look(attributes: str) -> tuple:
    found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', attributes))
    return tuple(found.get(key) for key in LOOK_KEYS)


def looks(dot_text: str) -> tuple:
    """(looks of the drawn spans and edits, looks of the legend's nodes), read from the DOT source."""
    drawn, legend = set(), []
    for _name, classes, attributes in NODE.findall(dot_text):
        kind = classes.split()[0]
        if kind in ("span", "edit"):
            drawn.add(look(attributes))
        elif kind == "legend":
            legend.append(look(attributes))
    return drawn, legend


def example_graphs():
    """(name, graph) of every counterexample of the seed at small bounds, and of hand-written runs with a restored
    span, a stale revert and a truncated record."""
    seed = first_seed(load_policy(EXAMPLES / "seed_flawed.yaml"))
    report = check(seed, CheckOptions(depth=6, spans=4, prove=False, **BOUNDS))
    out = [(f"seed {r.condition}", edit_graph(seed, replay(seed, r.trace.actions, r.trace.spans)))
           for r in report.results if r.trace is not None]
    restore = first_seed(parse_policy_text("name: restore\nevict: edited\ndeployment:\n  undo: blind\n",
                                           "restore.yaml"))
    out.append(("restore", edit_graph(restore, replay(restore, (Append("message", 2), Edit(0, "transform"),
                                                               Compact(), Undo(1))))))
    stale = first_seed(parse_policy_text("name: stale\nevict: false\ndeployment:\n  undo: blind\n", "stale.yaml"))
    out.append(("stale", edit_graph(stale, replay(stale, (Append("message", 1), Edit(0, "transform"),
                                                         Edit(0, "destroy"), Undo(1))))))
    budget = first_seed(load_policy(EXAMPLES / "budget_truncates_records.yaml"))
    out.append(("truncated", edit_graph(budget, replay(budget, (Append("message", budget.budget + 1),
                                                               Edit(0, "destroy"), Compact())))))
    return out


@pytest.fixture(scope="module")
def graphs():
    return example_graphs()


def test_legend_shows_exactly_the_node_looks_drawn_each_once(graphs):
    seen = set()
    for name, graph in graphs:
        drawn, legend = looks(graph_dot(graph, name))
        assert drawn and set(legend) == drawn and len(legend) == len(drawn), name  # each look once, no other
        seen |= drawn
    gone = [entry for entry in seen if entry[2] == "#e6e6e6"]
    assert gone and all(entry[5] == "#666666" for entry in gone)  # the grey (gone) nodes have their own entries
    assert len({entry[:3] for entry in seen}) >= 6
    assert looks(graph_dot(graphs[0][1], "t", legend=False))[1] == []


@needs_dot
def test_png_is_large_enough_to_read(graphs):
    for name, graph in graphs:
        png = picture(graph_dot(graph, name), "png")
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
        width, height = struct.unpack(">II", png[16:24])
        assert width >= MIN_WIDTH and height >= 500, (name, width, height)


@needs_dot
def test_nothing_is_drawn_within_ten_points_of_the_edge(graphs):
    for name, graph in graphs:
        root = ET.fromstring(picture(graph_dot(graph, name), "svg"))
        width, height = (float(root.get(k).removesuffix("pt")) for k in ("width", "height"))
        shift = re.search(r"translate\(([-\d.]+) ([-\d.]+)\)", root.find("{*}g").get("transform"))
        dx, dy = float(shift.group(1)), float(shift.group(2))
        points = []
        for el in root.iter():
            if el.tag.endswith(("polygon", "polyline")) and el.get("fill") != "white":
                points += [tuple(map(float, p.split(","))) for p in el.get("points").split()]
            elif el.tag.endswith("path"):
                numbers = list(map(float, re.findall(r"-?\d+(?:\.\d+)?", el.get("d"))))
                points += list(zip(numbers[::2], numbers[1::2]))
        assert points, name
        xs, ys = [x + dx for x, _ in points], [y + dy for _, y in points]
        assert min(xs) >= 10 and max(xs) <= width - 10 and min(ys) >= 10 and max(ys) <= height - 10, name
