"""The HTML report shows the policy file as it was checked, so every file:line:column in the page points at its text."""

from __future__ import annotations

import io
import re
from html import unescape

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.cli import main
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.outputs.html_report import report_html
from prunecheck.checker.language.loader import load_policy

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES

SHOWN = re.compile(r'<span class="line[^"]*" id="(p\d+)-L(\d+)"><span class="ln"> *(\d+)</span> (.*?)</span>'
                   r"(?=\n|</pre>)")
LINKED = re.compile(r'<a class="loc" href="#(p\d+)-L(\d+)">(\d+):(\d+)</a> `([^`]*)`')
PRINTED = re.compile(r"(?<![\w:.#-])(\d+):(\d+) `")


def plain(text: str) -> str:
    """Policy text as explanations quote it, whatever the form: `span.recency` is `recency`, `"pins": "self"` is
    `pins: self`; a sub-expression is quoted in its canonical form, so `"record"` is `'record'` (both `record`)."""
    return re.sub(r"\b(?:span|window)\.", "", text).replace('"', "").replace("'", "")


def html_of(*argv) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", *argv, "--format", "html", "--no-prove", "--depth", "4", "--spans", "4", *CLI_BOUNDS],
                out, err)
    assert code in (0, 1, 3), err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("name", ["seed_flawed.yaml", "seed_flawed.py", "kind_excludes_records.json",
                                  "budget_truncates_records.yaml"])
def test_every_location_in_the_page_lands_on_its_token_in_the_shown_file(name, tmp_path):
    # kind_excludes_records (the JSON form) holds every condition unless a host truncates (SPEC §2): with one, C2's
    # finding has locations to point at.
    host = tmp_path / "host.yaml"
    host.write_text('host_truncation: "on"\n')
    extra = ["--deployment", str(host)] if name == "kind_excludes_records.json" else []
    page = html_of(str(EXAMPLES / name), *extra)
    shown = {(p, int(n)): unescape(text) for p, n, number, text in SHOWN.findall(page) if n == number}
    source = (EXAMPLES / name).read_text(encoding="utf-8").splitlines()
    assert [shown[("p0", n)] for n in range(1, len(source) + 1)] == source
    links = LINKED.findall(page)
    assert links, "no location in the page"
    for prefix, target, line, column, token in links:
        assert target == line and ("p0", int(line)) in shown
        text = shown[("p0", int(line))]
        assert int(column) <= len(text) and not text[int(column) - 1].isspace(), (line, column)
        assert plain(unescape(token)) in plain(text), (line, column, token)
    text = unescape(re.sub(r"<[^>]+>", "", page))
    # every printed location is a link; 0:0 is a point written nowhere in the file (step_labels prints it so): since
    # ADR 0033 a role-blind policy's T1 cause names its unwritten default `pairs: apart`, and since ADR 0035 M1's and
    # J1's causes name the unwritten `evicted: destroyed` and `justification: unchecked`
    printed = PRINTED.findall(text)
    assert len([p for p in printed if p != ("0", "0")]) == len(links)
    unwritten = ("pairs: apart", "evicted: destroyed", "justification: unchecked")
    assert text.count("0:0 `") == sum(text.count(f"0:0 `{setting}`") for setting in unwritten)
    located = {int(line) for _, line, _, _, _ in links}
    assert {int(n) for n in re.findall(r'class="line located" id="p0-L(\d+)"', page)} == located


def test_a_file_changed_since_the_check_is_shown_as_it_was_checked(tmp_path):
    path = tmp_path / "p.yaml"
    text = (EXAMPLES / "seed_flawed.yaml").read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    policy = load_policy(path)
    report = check(policy, CheckOptions(depth=2, spans=3, only=("C1",), prove=False, **BOUNDS))
    path.write_text("name: other\nevict: pinned\n", encoding="utf-8")
    page = report_html(findings_of(policy, report))
    shown = [unescape(line) for _p, _n, _number, line in SHOWN.findall(page)]
    assert shown == text.splitlines() and "evict: pinned" not in page
    for _prefix, _target, line, column, token in LINKED.findall(page):
        assert plain(unescape(token)) in plain(shown[int(line) - 1]), (line, column, token)
