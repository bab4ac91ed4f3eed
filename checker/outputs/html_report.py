"""A self-contained HTML page for check reports: results table, counterexample steps, pictures and policy text."""

from __future__ import annotations

import re
import unicodedata
from html import escape as html_escape
from typing import Optional

from prunecheck.spec.conditions import DESCRIPTIONS
from prunecheck.spec.policy import Policy

from prunecheck.checker.findings.finding import Finding, Findings
from prunecheck.checker.findings.graph import GraphvizMissing, RenderError, edit_graph, graph_dot, picture
from prunecheck.checker.language.locate import source_lines
from prunecheck.checker.language.printer import policy_yaml
from prunecheck.checker.outputs.decision_doc import answer_text, basis_text, consequence_text
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.outputs.render import (basis_lines, bounds_text, contribution_lines, deployment_text,
                                               expectation_lines, file_error_text, peak_text, run_text)
from prunecheck.spec.actions import action_text
from prunecheck.checker.result import Report

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       max-width: 1100px; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.25em; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .3em; }
.meta { color: #555; margin: .2em 0 .4em; }
ul.stats { color: #555; margin: 0 0 1em; padding-left: 1.2em; font-size: 13px; }
table.results { border-collapse: collapse; width: 100%; }
table.results th, table.results td { border: 1px solid #ccc; padding: .3em .6em; text-align: left;
       vertical-align: top; }
table.results th { background: #f2f2f2; }
td.depth { text-align: right; }
.verdict { font-weight: 600; }
.violated .verdict { color: #b71c1c; } .holds .verdict { color: #1b5e20; } .unknown .verdict { color: #8a6d00; }
.accepted { color: #555; font-style: italic; }
ul.expect { color: #b71c1c; }
tr.violated { background: #fdecea; } tr.holds { background: #edf7ed; } tr.unknown { background: #fff8e1; }
ol.trace li { margin: .15em 0; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; }
ol.trace .effect { color: #b71c1c; font-family: system-ui, sans-serif; }
ol.trace li.last { font-weight: 600; }
figure { margin: .6em 0; } figure svg { max-width: 100%; height: auto; }
.nopicture { color: #8a6d00; }
pre.policy .line:target, pre.policy .located { background: #fff3b0; }
pre.policy .ln { display: inline-block; min-width: 2.5em; color: #888; user-select: none; }
pre.policy, pre.dot { background: #f7f7f7; border: 1px solid #ddd; padding: .6em; overflow-x: auto; font-size: 13px; }
footer { color: #777; margin-top: 2em; font-size: 12px; }
nav.index li.error { color: #8e24aa; }
table.decision { border-collapse: collapse; } table.decision th, table.decision td { border: 1px solid #ccc;
       padding: .3em .6em; text-align: left; vertical-align: top; } table.decision th { background: #f2f2f2; }
"""
_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# A location as explanations print it, in escaped text: `6:8 `not pinned``.
_LOCATION = re.compile(r"(?<![\w:.#-])(\d+):(\d+)(?= `)")


LEGEND = ('<p class="legend">Each picture has one column per step and a legend of the node styles it uses. '
          "A record or rationale marked <i>candidate @k</i> became a compaction candidate of the policy at step k.</p>")


def escape(text) -> str:
    """text escaped for HTML, with control and format characters (bidi overrides, zero-width) shown as \\uXXXX."""
    shown = "".join(f"\\u{ord(ch):04x}" if ch not in "\n\t" and unicodedata.category(ch) in
                    ("Cc", "Cf", "Cs", "Co", "Zl", "Zp") else ch for ch in str(text))
    return html_escape(shown, quote=True)


def inline_svg(svg_text: str) -> str:
    """Graphviz SVG output without its XML prolog, doctype and comments, ready to sit inside HTML."""
    return _COMMENT.sub("", _PROLOG.sub("", svg_text, count=1)).strip()


def _labels_for(step_labels, report: Report, condition: str, count: int) -> Optional[list]:
    if not step_labels:
        return None
    labels = step_labels.get((report.policy_name, condition), step_labels.get(condition))
    if labels is None:
        return None
    if len(labels) != count:
        raise RenderError(f"step_labels[{condition!r}] has {len(labels)} labels for a {count}-step trace")
    return [str(label) for label in labels]


def _effect(transition, clock: bool) -> str:
    parts = []
    if clock and transition.after.step - transition.before.step != 1:
        parts.append(f"steps {transition.before.step + 1}-{transition.after.step}")
    if transition.outcome != "ok":
        parts.append(transition.outcome)
    for how in ("evicted", "truncated"):
        removed = sorted(getattr(transition, how))
        if removed:
            parts.append(f"{how} " + ", ".join(f"#{i}" for i in removed))
    return "; ".join(parts)


def _picture_html(graph, anchor: str, condition: str) -> str:
    dot_text = graph_dot(graph, "", id_prefix=f"{anchor}-")
    try:
        svg = inline_svg(picture(dot_text, "svg").decode("utf-8"))
    except GraphvizMissing as exc:
        return (f'<p class="nopicture">No picture: {escape(exc.one_line())}. Its DOT text:</p>\n'
                f'<pre class="dot">{escape(dot_text)}</pre>')
    return (f'<figure id="{anchor}-picture">\n{svg}\n'
            f"<figcaption>Spans and edits of the {escape(condition)} counterexample, one column per step."
            f"</figcaption>\n</figure>")


def _linked(escaped: str, lines: Optional[tuple], prefix: str, located: set) -> str:
    """Escaped text with each `line:col` location made a link to that line of the shown file (noted in located)."""
    if lines is None:
        return escaped

    def link(match) -> str:
        line = int(match.group(1))
        if not 1 <= line <= len(lines):
            return match.group(0)
        located.add(line)
        return f'<a class="loc" href="#{prefix}-L{line}">{match.group(0)}</a>'
    return _LOCATION.sub(link, escaped)


def _source_html(policy: Policy, lines: Optional[tuple], prefix: str, located: set) -> str:
    """The policy file as it was checked (the text the loader read), line-numbered, with located lines highlighted;
    for a policy not parsed from text, the policy re-rendered, saying so."""
    if lines is None:
        return (f'<h3>policy text</h3>\n<p class="nopicture">{escape(policy.source)} was not parsed from text: '
                "this is the policy re-rendered.</p>\n"
                f'<pre class="policy">{escape(policy_yaml(policy))}</pre>')
    width = len(str(len(lines)))
    shown = [f'<span class="line{" located" if number in located else ""}" id="{prefix}-L{number}">'
             f'<span class="ln">{number:>{width}}</span> {escape(line)}</span>'
             for number, line in enumerate(lines, start=1)]
    return f'<h3>policy file {escape(policy.source)}</h3>\n<pre class="policy">{chr(10).join(shown)}</pre>'


def _counterexample_html(policy, report: Report, finding: Finding, anchor: str, step_labels, links) -> str:
    transitions = finding.transitions
    labels = _labels_for(step_labels, report, finding.condition, len(transitions))
    items = []
    for index, t in enumerate(transitions):
        text = labels[index] if labels is not None else action_text(t.action, keywords=True)
        effect = _effect(t, clock=labels is None)  # the explanation's labels name a repeated step's real steps
        last = index == len(transitions) - 1
        item = ('<li class="last">' if last else "<li>") + links(escape(text))
        if effect:
            item += f' <span class="effect">({escape(effect)})</span>'
        if last:
            item += f' <span class="effect">&larr; {escape(finding.condition)} violated</span>'
        items.append(item + "</li>")
    description = DESCRIPTIONS.get(finding.condition, "")
    return "\n".join([
        f'<section class="counterexample" id="{anchor}" data-condition="{escape(finding.condition)}">',
        f"<h3>{escape(finding.condition)} counterexample: {escape(finding.trace.length())}</h3>",
        f"<p>{escape(description)}</p>" if description else "",
        '<ol class="trace">', *items, "</ol>",
        _picture_html(edit_graph(policy, transitions), anchor, finding.condition),
        "</section>",
    ])


def _accepted_html(triage, condition: str) -> str:
    acceptance = triage.acceptance(condition) if triage is not None else None
    if acceptance is None:
        return ""
    from prunecheck.checker.outputs.accept import accepted_line
    return f'<br><span class="accepted">{escape(accepted_line(condition, acceptance))}</span>'


def _report_html(findings: Findings, index: int, step_labels, triage=None) -> str:
    report, policy = findings.report, findings.policy
    rows, sections, located, lines = [], [], set(), source_lines(policy)

    def links(escaped: str) -> str:
        return _linked(escaped, lines, f"p{index}", located)

    for number, result in enumerate(report.results):
        anchor = f"p{index}-r{number}"
        verdict = escape(str(result.verdict))
        condition = escape(result.condition)
        if result.trace is not None:
            condition = f'<a href="#{anchor}">{condition}</a>'
            sections.append(_counterexample_html(policy, report, findings.first(result.condition), anchor,
                                                 step_labels, links))
        depth = "-" if result.depth is None else str(int(result.depth))
        reason = links(escape(reason_text(result.reason)))
        rows.append(f'<tr class="{verdict}" data-condition="{escape(result.condition)}"><td>{condition}</td>'
                    f'<td class="verdict">{verdict}</td><td class="depth">{depth}</td>'
                    f"<td>{reason}{_accepted_html(triage, result.condition)}</td></tr>")
    meta = (f"source {escape(report.source)} · sha256:{escape(report.policy_hash[:12])} · depth {int(report.depth)}, "
            f"{int(report.spans)} spans · verdict <span class=\"verdict\">{escape(str(report.verdict))}</span>"
            f'<br><span class="deployment">deployment {escape(deployment_text(report))}</span>'
            + "".join(f'<br><span class="basis">{escape(line.strip())}</span>'
                      for line in basis_lines(report) + contribution_lines(report)) +
            f'<br><span class="bounds">bounds {escape(bounds_text(report))}</span>')
    if report.recovery_peak is not None:
        meta += f'<br><span class="peak">recovery set: {escape(peak_text(report.recovery_peak))}</span>'

    stats = [f'<li data-condition="{escape(r.condition)}">{escape(r.condition)}: '
             f"{escape('; '.join(run_text(run) for run in r.stats.runs))}</li>" for r in report.results if r.stats.runs]
    return "\n".join([
        f'<section class="report {escape(str(report.verdict))}" id="p{index}">',
        f"<h2>policy {escape(report.policy_name)}</h2>",
        f'<p class="meta">{meta}</p>',
        '<ul class="stats">' + "".join(stats) + "</ul>" if stats else "",
        '<table class="results">',
        "<thead><tr><th>condition</th><th>verdict</th><th>depth</th><th>reason</th></tr></thead>",
        "<tbody>", *rows, "</tbody>", "</table>",
        _expect_html(findings, links),
        _decision_html(findings.decision),
        LEGEND if sections else "",
        *sections,
        _source_html(policy, lines, f"p{index}", located),
        "</section>",
    ])


def _expect_html(findings: Findings, links) -> str:
    """The expectations of the policy's expect table that the report does not meet (render.expectation_lines)."""
    lines = expectation_lines(findings)
    if not lines:
        return ""
    items = "".join(f'<li>{links(escape(line))}</li>' for line in lines)
    return f'<ul class="expect">{items}</ul>'


def _decision_html(decision) -> str:
    """The seed's four questions answered (checker/findings/decision.py), a table, and the consequence."""
    rows = "".join(f'<tr data-question="{a.question.id}"><td>{a.question.id}</td><td>{escape(a.question.words)}</td>'
                   f'<td class="answer">{escape(answer_text(a))}</td><td>{escape(basis_text(a))}</td></tr>'
                   for a in decision.answers)
    return ('<h3>Decision</h3><table class="decision"><thead><tr><th>#</th><th>the seed\'s question</th>'
            f"<th>answer</th><th>rests on</th></tr></thead><tbody>{rows}</tbody></table>"
            f'<p class="consequence">consequence: {escape(consequence_text(decision))}</p>')


def _index_html(reports, errors) -> str:
    """Links to each policy's section, and the files that could not be checked, for a page of several."""
    items = [f'<li class="{escape(str(r.verdict))}"><a href="#p{i}">{escape(r.policy_name)}</a> ({escape(r.source)}): '
             f'<span class="verdict">{escape(str(r.verdict))}</span></li>' for i, r in enumerate(reports)]
    items += [f'<li class="error">not checked: {escape(file_error_text(path, error))}</li>' for path, error in errors]
    return '<nav class="index"><ul>\n' + "\n".join(items) + "\n</ul></nav>"


def report_html(findings, step_labels=None, errors=(), triages=None) -> str:
    """One self-contained HTML page (inline CSS and SVG, no scripts, no external resources) for the Findings of one
    checked policy or a sequence of them, with an index when there are several.

    step_labels: optional mapping from a condition (or a (policy name, condition) pair) to one label per step of its
    counterexample, or a sequence of such mappings, one per report; by default a step reads as its action call.
    errors: (path, one-line error) of files that could not be checked. triages: an accept.Triage per report, to
    mark accepted findings. Every policy-derived string is escaped."""
    checked = [findings] if isinstance(findings, Findings) else list(findings)
    reports = [f.report for f in checked]
    if not reports and not errors:
        raise RenderError("no report to render")
    labels = list(step_labels) if isinstance(step_labels, (list, tuple)) else [step_labels] * len(reports)
    bodies = [_report_html(f, i, marks, triages[i] if triages else None)
              for i, (f, marks) in enumerate(zip(checked, labels))]
    several = len(reports) + len(errors) > 1
    name = f"{len(reports) + len(errors)} policies" if several else reports[0].policy_name
    versions = ", ".join(f"{k} {v}" for k, v in reports[0].versions) if reports else ""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>prunecheck report: {escape(name)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>prunecheck report: {escape(name)}</h1>",
        _index_html(reports, errors) if several else "",
        *bodies,
        f"<footer>{escape(versions)}</footer>" if versions else "",
        "</body>",
        "</html>",
    ]) + "\n"
