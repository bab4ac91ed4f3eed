"""The edit/record graph, its DOT and pictures, `prunecheck graph`, and the HTML report checked in headless Chromium."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from prunecheck.checker.commands import graph as graph_command
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.cli import main
from prunecheck.checker.findings.graph import (
    GraphvizMissing, RenderError, dot_string, edit_graph, edit_node, graph_dot, picture, span_node,
)
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.outputs.html_report import report_html
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.spec.actions import action_text
from prunecheck.checker.engines.replay import replay
from prunecheck.spec.runtime import Append, Compact, Edit, Undo

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES, HANG_GUARD
SEED = EXAMPLES / "seed_flawed.yaml"
DOT = shutil.which("dot")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_dot = pytest.mark.skipif(DOT is None, reason="Graphviz `dot` is not installed")
SVG_NS = "{http://www.w3.org/2000/svg}"
HOSTILE_NAME = '</title><script>alert(1)</script> & &amp; \\N \\l " <!-- x --> \u202e'
SHOWN_NAME = HOSTILE_NAME.replace("\u202e", "\\u202e")  # format characters are shown, not obeyed


def hostile_yaml() -> str:
    escaped = HOSTILE_NAME.replace("\\", "\\\\").replace('"', '\\"')
    return (f'name: "{escaped}"\n'
            'description: "<img src=x onerror=alert(2)>"\n'
            "evict: not pinned and recency * frequency < 0.25\n"
            "deployment:\n  records: window\n  pins: self\n  audit: policy\n")


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err, extra_commands={"graph": (graph_command.add_parser, graph_command.run)})
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def seed():
    policy = load_policy(SEED)
    return policy, check(policy, CheckOptions(depth=6, spans=5, **BOUNDS))


@pytest.fixture(scope="module")
def c2_trace_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("traces")
    code, _, _ = run_cli("check", str(SEED), "--depth", "6", "--spans", "5", "--only", "C2", "--no-prove",
                         "--out", str(out), *CLI_BOUNDS)
    assert code == 1
    (path,) = out.glob("*.C2.itf.json")
    return path


# --------------------------------------------------------------------------- the graph


def test_a_c4_picture_shows_the_reversible_status_that_violates_it():
    from prunecheck.checker.engines.replay import first_violation

    policy = load_policy(SEED)
    transitions = replay(policy, [Append("message", 1), Edit(0, "transform"), Compact()])
    assert first_violation(policy, transitions, "C4") == 3  # the record is gone, the self-certified audit says so
    heads = [line for line in graph_dot(edit_graph(policy, transitions)).splitlines() if 'class="step"' in line]
    assert "status:" not in heads[0]  # no edit yet: the status says nothing
    assert "status: reversible" in heads[1] and "evicted #0, #1\\nstatus: reversible" in heads[2]


def test_seed_c2_graph_marks_the_record_evicted_at_the_compaction(seed):
    policy, report = seed
    trace = report.result("C2").trace
    transitions = replay(policy, trace.actions, trace.spans)
    g = edit_graph(policy, transitions)
    (info,) = transitions[-1].after.edits
    compaction = next(i for i, t in enumerate(transitions, 1) if info.record in t.evicted)
    assert isinstance(transitions[compaction - 1].action, Compact) and compaction == len(transitions)
    record, rationale, target, edit = (g.nodes[span_node(info.record)], g.nodes[span_node(info.rationale)],
                                       g.nodes[span_node(info.target)], g.nodes[edit_node(info.record)])
    assert record["role"] == "record" and record["namespace"] == "window" and record["evicted"] == compaction
    assert record["alive"] is False and record["truncated"] is None
    assert rationale["role"] == "rationale" and rationale["namespace"] == "log" and rationale["alive"] is True
    assert target["role"] == "content" and target["created"] < edit["step"] == record["created"]
    assert edit["record_lost"] == compaction and edit["undone"] is None
    edges = {(u, v): d for u, v, d in g.edges(data=True)}
    made = edit["step"]
    assert edges == {
        (edit_node(info.record), span_node(info.target)): {"rel": "target", "step": made},
        (span_node(info.record), edit_node(info.record)): {"rel": "record", "step": made},
        (span_node(info.rationale), edit_node(info.record)): {"rel": "rationale", "step": made},
    }
    assert [s["action"] for s in g.graph["steps"]][-1] == "compact()"
    assert info.record in g.graph["steps"][-1]["evicted"]


def test_seed_c1_graph_has_the_record_as_a_candidate_and_nothing_evicted(seed):
    policy, report = seed
    trace = report.result("C1").trace
    g = edit_graph(policy, replay(policy, trace.actions, trace.spans))
    records = [a for _, a in g.nodes(data=True) if a["node"] == "span" and a["role"] == "record"]
    assert records and all(a["candidate"] == len(trace.actions) for a in records)
    assert all(a["evicted"] is None and a["alive"] for _, a in g.nodes(data=True) if a["node"] == "span")


def test_graph_of_a_handwritten_run_with_restore_stale_revert_and_truncation():
    policy = parse_policy_text("name: restore\nevict: edited\ndeployment:\n  undo: blind\n", "restore.yaml")
    actions = (Append("message", 2), Edit(0, "transform"), Compact(), Undo(1))
    g = edit_graph(policy, replay(policy, actions))
    target, edit = g.nodes[span_node(0)], g.nodes[edit_node(1)]
    assert (target["evicted"], target["restored"], target["alive"]) == (3, 4, True)
    assert (target["kind"], target["final_kind"]) == ("message", "message")
    assert edit["undone"] == 4 and edit["undo_attempts"] == ((4, "reverted"),) and edit["stale_revert"] is None
    assert g.nodes[span_node(1)]["namespace"] == "undo" and g.nodes[span_node(1)]["candidate"] is None

    stale = parse_policy_text("name: stale\nevict: false\ndeployment:\n  undo: blind\n", "stale.yaml")
    g = edit_graph(stale, replay(stale, (Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1))))
    assert g.nodes[edit_node(1)]["stale_revert"] == 4 and g.nodes[edit_node(3)]["undone"] is None
    assert "target re-edited" in graph_dot(g)

    budget = load_policy(EXAMPLES / "budget_truncates_records.yaml")
    # the first seed's destroy record, as large as its target (by default it keeps only the id, 1 token, and stays)
    budget = replace(budget, deployment=replace(budget.deployment, evidence="off", destroy_record="verbatim"))
    big = budget.budget + 1
    g = edit_graph(budget, replay(budget, (Append("message", big), Edit(0, "destroy"), Compact())))
    record = g.nodes[span_node(1)]
    assert record["truncated"] == 3 and record["evicted"] is None and g.nodes[edit_node(1)]["record_lost"] == 3
    assert 'class="span record truncated gone"' in graph_dot(g)


def test_dot_orders_columns_by_step_and_styles_evicted_nodes(seed):
    policy, report = seed
    trace = report.result("C2").trace
    g = edit_graph(policy, replay(policy, trace.actions, trace.spans))
    text = graph_dot(g, "title")
    assert text.startswith("digraph trace {") and "rankdir=LR" in text
    for step in range(1, len(trace.actions) + 1):
        assert f"{{ rank=same; t{step};" in text
    assert [f"t{i} -> t{i + 1}" in text for i in range(1, len(trace.actions))] == [True] * (len(trace.actions) - 1)
    evicted_lines = [line for line in text.splitlines() if "evicted" in line and line.lstrip().startswith("s")]
    assert evicted_lines and all('"filled,dashed"' in line and "#d62728" in line for line in evicted_lines)


@needs_dot
def test_dot_text_is_valid_for_graphviz_and_the_svg_carries_ids_and_classes(seed):
    policy, report = seed
    for result in report.results:
        if result.trace is None:
            continue
        g = edit_graph(policy, replay(policy, result.trace.actions, result.trace.spans))
        done = subprocess.run([DOT, "-Tsvg"], input=graph_dot(g, "t", "x-").encode(), capture_output=True,
                              timeout=HANG_GUARD)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        root = ET.fromstring(done.stdout)
        classes = {el.get("id"): el.get("class") for el in root.iter(f"{SVG_NS}g") if el.get("id")}
        spans = [n for n, a in g.nodes(data=True) if a["node"] == "span"]
        assert all(classes.get(f"x-{n}", "").startswith("node span") for n in spans)
        if result.condition == "C2":
            assert "evicted" in classes[f"x-{span_node(1)}"].split()


@needs_dot
def test_hostile_title_is_shown_literally_by_graphviz():
    name = HOSTILE_NAME + "\x07 end"
    g = edit_graph(load_policy(SEED), replay(load_policy(SEED), (Append("message", 1),)))
    svg = picture(graph_dot(g, name), "svg")
    texts = [el.text or "" for el in ET.fromstring(svg).iter(f"{SVG_NS}text")]
    assert name.replace("\x07", "\\u0007").replace("\u202e", "\\u202e") in texts
    assert b"<script" not in svg and dot_string("a\nb") == '"a\\nb"'


def test_picture_refuses_other_formats_and_names_a_missing_binary():
    with pytest.raises(RenderError, match="unsupported"):
        picture("digraph { }", "jpg")
    with pytest.raises(GraphvizMissing, match="'no-such-dot-binary'"):
        picture("digraph { }", "svg", binary="no-such-dot-binary")
    assert picture("digraph { }", "dot") == b"digraph { }"


# --------------------------------------------------------------------------- prunecheck graph


def test_cli_draws_a_trace_file_in_every_format(c2_trace_file, tmp_path):
    formats = ("dot", "svg", "png") if DOT else ("dot",)
    for fmt in formats:
        out = tmp_path / f"c2.{fmt}"
        code, stdout, stderr = run_cli("graph", str(c2_trace_file), "--out", str(out))
        assert (code, stderr) == (0, "") and stdout.startswith(f"wrote {out}: 3 steps")
        assert stdout.endswith(", 1 edit\n"), stdout  # one edit, not "1 edits"
        data = out.read_bytes()
        expected_start = {"dot": b"digraph trace {", "svg": b"<?xml", "png": b"\x89PNG\r\n\x1a\n"}[fmt]
        assert data.startswith(expected_start)
    if DOT:
        assert b"counterexample to C2" in (tmp_path / "c2.svg").read_bytes()


def test_cli_without_dot_writes_dot_and_refuses_svg_in_one_line(c2_trace_file, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, _ = run_cli("graph", str(c2_trace_file), "--out", str(tmp_path / "g.dot"))
    assert code == 0 and (tmp_path / "g.dot").exists()
    for fmt in ("svg", "png"):
        code, stdout, stderr = run_cli("graph", str(c2_trace_file), "--out", str(tmp_path / f"g.{fmt}"))
        assert code == 2 and stdout == "" and stderr.count("\n") == 1
        assert "'dot' binary is not installed" in stderr and not (tmp_path / f"g.{fmt}").exists()


def test_cli_refuses_bad_extensions_and_bad_traces_with_exit_2(c2_trace_file, tmp_path):
    code, _, err = run_cli("graph", str(c2_trace_file), "--out", str(tmp_path / "g.jpg"))
    assert code == 2 and err.count("\n") == 1 and ".svg, .png or .dot" in err
    junk = tmp_path / "junk.itf.json"
    junk.write_text("{not json", encoding="utf-8")
    code, _, err = run_cli("graph", str(junk), "--out", str(tmp_path / "g.dot"))
    assert code == 2 and err.startswith("prunecheck: error: ") and "not JSON" in err
    broken = tmp_path / "broken.itf.json"
    broken.write_text(c2_trace_file.read_text(encoding="utf-8").replace('"compact"', '"undo"', 1), encoding="utf-8")
    code, _, err = run_cli("graph", str(broken), "--out", str(tmp_path / "g.dot"))
    assert code == 2 and err.count("\n") == 1


# --------------------------------------------------------------------------- the HTML report


class _Elements(HTMLParser):
    """Every start tag of a document as (tag, attributes), plus the text, for assertions on a DOM dump."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def elements(html_text: str) -> _Elements:
    parser = _Elements()
    parser.feed(html_text)
    return parser


def test_html_lists_results_steps_and_policy_and_uses_step_labels(seed):
    policy, report = seed
    traces = [r for r in report.results if r.trace is not None]
    labels = {"C2": [f"label <{i}>" for i in range(len(report.result("C2").trace.actions))]}
    page = report_html(findings_of(policy, report), step_labels=labels)
    parsed = elements(page)
    rows = [a["data-condition"] for t, a in parsed.tags if t == "tr" and "data-condition" in a]
    assert rows == [r.condition for r in report.results]
    text = "".join(parsed.text)
    assert "label <0>" in text and "&lt;0&gt;" in page
    c1 = report.result("C1").trace
    assert all(action_text(a, keywords=True) in text for a in c1.actions)
    assert "evict: not pinned and recency * frequency < 0.25" in text
    assert sum(1 for t, _ in parsed.tags if t == "svg") == len(traces) or DOT is None
    assert not any(t in ("script", "link", "img", "iframe") for t, _ in parsed.tags)
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', "")
    with pytest.raises(RenderError):
        report_html(findings_of(policy, report), step_labels={"C2": ["too few"]})
    with pytest.raises(RenderError):
        report_html([])


def test_html_escapes_hostile_policy_names_sources_and_descriptions():
    policy = parse_policy_text(hostile_yaml(), "<b>evil</b>.yaml")
    assert policy.name == HOSTILE_NAME
    report = check(policy, CheckOptions(depth=3, spans=4, only=("C1",), prove=False, **BOUNDS))
    page = report_html(findings_of(policy, report))
    parsed = elements(page)
    assert not any(t in ("script", "img", "b") for t, _ in parsed.tags)
    assert "<!-- x -->" not in page and "<script>" not in page and "<img" not in page
    text = "".join(parsed.text)
    assert SHOWN_NAME in text and "\u202e" not in page and "<b>evil</b>.yaml" in text and "<img src=x onerror=alert(2)>" in text


# --------------------------------------------------------------------------- in a real browser


def png_colours(data: bytes) -> set:
    """The distinct pixel colours of an 8-bit RGB/RGBA/grey PNG, decoded with zlib (no imaging library)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour_type in (0, 2, 4, 6)
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour_type]
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    assert len(raw) == height * (stride + 1)
    prev, colours = bytearray(stride), set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + (((line[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a, b, c = (line[i - bpp], prev[i], prev[i - bpp]) if i >= bpp else (0, prev[i], 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colours.update(bytes(line[i:i + min(bpp, 3)]) for i in range(0, stride, bpp))
        prev = line
    return colours


def chromium(tmp_path: Path, *args) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (/usr/bin/chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    done = subprocess.run([CHROMIUM, *flags, *args], capture_output=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@needs_dot
def test_report_in_headless_chromium_has_rows_pictures_and_a_nonblank_screenshot(seed, tmp_path):
    policy, report = seed
    page = tmp_path / "report.html"
    page.write_text(report_html(findings_of(policy, report)), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout.decode("utf-8")
    parsed = elements(dom)
    rows = [a for t, a in parsed.tags if t == "tr" and "data-condition" in a]
    assert [a["data-condition"] for a in rows] == [r.condition for r in report.results]
    assert [a["class"] for a in rows] == [str(r.verdict) for r in report.results]
    traces = [n for n, r in enumerate(report.results) if r.trace is not None]
    assert sum(1 for t, _ in parsed.tags if t == "svg") == len(traces)
    c2 = [n for n, r in enumerate(report.results) if r.condition == "C2"][0]
    ids = {a.get("id"): a.get("class", "") for t, a in parsed.tags if t == "g"}
    assert {"span", "record", "evicted", "gone"} <= set(ids[f"p0-r{c2}-s1"].split())
    assert not any(t == "script" for t, _ in parsed.tags)

    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1000,1300", page.as_uri())
    colours = png_colours(shot.read_bytes())
    assert len(colours) > 1
    violated_row = bytes.fromhex("fdecea")
    assert any(max(abs(a - b) for a, b in zip(c, violated_row)) <= 3 for c in colours if len(c) == 3)


def test_hostile_report_runs_nothing_in_chromium(tmp_path):
    policy = parse_policy_text(hostile_yaml(), "evil.yaml")
    report = check(policy, CheckOptions(depth=3, spans=4, only=("C1",), prove=False, **BOUNDS))
    page = tmp_path / "hostile.html"
    page.write_text(report_html(findings_of(policy, report)), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout.decode("utf-8")
    parsed = elements(dom)
    assert not any(t in ("script", "img") for t, _ in parsed.tags)
    assert SHOWN_NAME in "".join(parsed.text)
