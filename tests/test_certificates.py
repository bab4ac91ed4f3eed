"""An attacker's tests for `certify`: forged invariants, fields, assumptions and policy bindings are all rejected."""

import copy
import io
import json

import pytest
import z3
from hypothesis import event, given, settings
from hypothesis import strategies as st

from prunecheck.checker import cli
from prunecheck.checker.engines.certificate import Status, confirm_certificate, recheck
from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.engines.certificate_set import certify_set
from prunecheck.checker.check import check, clear_caches
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.language.document import policy_hash
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.result import Verdict
from prunecheck.checker.outputs.reasons import reason_text

from conftest import BOUNDS, EXAMPLES, HOUR

# cvc5 needs about 10^5 per obligation of a genuine certificate; tests bound solvers by resources, never by time.
RLIMIT = 5_000_000
CERT_BOUNDS = {"timeout_ms": int(HOUR * 1000), "rlimit": RLIMIT}
VIOLATED = ("C1", "C2", "C4")
FLAWED = EXAMPLES / "seed_flawed.yaml"
SAFE = EXAMPLES / "seed_safe_design.yaml"


@pytest.fixture(scope="module")
def flawed():
    policy = load_policy(FLAWED)
    report = check(policy, CheckOptions(depth=4, spans=4, **BOUNDS))
    verdicts = {r.condition: r.verdict for r in report.results}
    # The forgeries matter because these three have counterexamples that check replayed on the runtime.
    assert all(verdicts[c] == Verdict.VIOLATED for c in VIOLATED)
    return policy, {r.condition: json.loads(r.certificate) for r in report.results if r.certificate}


@pytest.fixture(scope="module")
def safe():
    policy = load_policy(SAFE)
    report = check(policy, CheckOptions(depth=4, spans=4, **BOUNDS))
    return policy, {r.condition: json.loads(r.certificate) for r in report.results if r.certificate}


def _params(encoding) -> str:
    return " ".join(f"({v.sexpr()} {v.sort().name()})" for v in encoding.param.variables())


def forge(base, policy, condition, body=None, assume=(), free_policy=True, invariant=None):
    """A certificate an attacker could write: the model text regenerated honestly, everything else chosen."""
    doc = copy.deepcopy(base)
    enc = Encoding(policy, condition, free_policy, assume)
    doc.update(condition=condition, assume=list(assume), free_policy=free_policy, model_smt2=enc.model_text())
    if invariant is not None:
        doc["invariant_smt2"] = invariant
    elif body is not None:
        doc["invariant_smt2"] = f"(define-fun Inv ({_params(enc)}) Bool {body})\n"
    return doc


def certify(tmp_path, docs, *extra):
    paths = []
    for i, doc in enumerate(docs):
        path = tmp_path / f"cert{i}.json"
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
        paths.append(str(path))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["certify", *paths, "--rlimit", str(RLIMIT), "--timeout", str(int(HOUR)), *extra], out, err)
    return code, out.getvalue(), err.getvalue()


def _status_lines(out: str) -> list:
    return [line for line in out.splitlines() if not line.startswith("  ")]


def assert_rejected(tmp_path, docs, fragment, *extra):
    code, out, err = certify(tmp_path, docs, *extra)
    lines = _status_lines(out)
    assert code == 1 and not err, (code, out, err)
    assert "rejected (" in lines[0] or "refuted (" in lines[0], out
    assert fragment in lines[0] and len(lines[0]) < 600, out
    return lines


# The forgeries from the audit (issue 11), each on a condition seed_flawed.yaml violates.

@pytest.mark.parametrize("condition", VIOLATED)
def test_a_second_command_after_inv_is_rejected(tmp_path, flawed, condition):
    policy, certs = flawed
    doc = forge(certs["P1"], policy, condition, body="true)\n(assert false")
    assert_rejected(tmp_path, [doc], "a second command after the definition of Inv at 2:1")


@pytest.mark.parametrize("condition", VIOLATED)
def test_inv_naming_the_models_bad_is_rejected(tmp_path, flawed, condition):
    policy, certs = flawed
    assert_rejected(tmp_path, [forge(certs["P1"], policy, condition, body="(not Bad)")], "the model's symbol Bad")


def test_a_certificate_assuming_its_own_condition_is_rejected(tmp_path, flawed):
    policy, certs = flawed
    assert_rejected(tmp_path, [forge(certs["P1"], policy, "C2", body="true", assume=["C2"])], "assumes C2 itself")
    enc = Encoding(policy, "C1", True)
    not_c1 = z3.Not(enc.violation("C1", enc.param)).sexpr()
    assert_rejected(tmp_path, [forge(certs["P1"], policy, "C1", body=not_c1, assume=["C1"])], "assumes C1 itself")


def test_a_zeroed_hash_is_rejected(tmp_path, flawed):
    doc = copy.deepcopy(flawed[1]["P1"])
    doc["policy_hash"] = "0" * 64
    assert_rejected(tmp_path, [doc], "policy_hash")


@pytest.mark.parametrize("key, first", [("policy_hash", "0" * 64), ("evict", "false")])
def test_a_key_given_twice_is_rejected(tmp_path, safe, key, first):
    """A zeroed hash (or another policy) shown first, the genuine value last, which is what json would check."""
    genuine = safe[1]["C1"]
    forged = json.dumps(genuine).replace(f'"{key}": ', f'"{key}": "{first}", "{key}": ', 1)
    assert json.loads(forged) == genuine
    assert_rejected(tmp_path, [forged], f"certificate: the key '{key}' appears twice in one object")
    assert confirm_certificate(forged, safe[0], "C1", **CERT_BOUNDS).status is Status.REJECTED


def test_a_relabelled_certificate_for_another_policy_is_rejected(tmp_path, flawed, safe):
    policy, certs = flawed
    doc = copy.deepcopy(safe[1]["C1"])
    for key in ("name", "description"):
        doc["policy"][key] = certs["P1"]["policy"][key]
    doc["policy_hash"] = certs["P1"]["policy_hash"]
    assert_rejected(tmp_path, [doc], "policy_hash")
    # The whole policy swapped in, hash and all: the model no longer matches.
    doc["policy"] = copy.deepcopy(certs["P1"]["policy"])
    assert_rejected(tmp_path, [doc], "model_smt2")
    # ...and with the model regenerated too, the safe design's invariant does not prove C1 of the flawed one.
    # The safe design now keeps pairs together (ADR 0033), so its invariant is over the role variables the flawed
    # model lacks: rejected by its signature before an obligation is tried, or refuted by one.
    (status,) = assert_rejected(tmp_path, [forge(doc, policy, "C1")], "")[:1]
    assert "refuted (obligation" in status or "rejected (invariant: parameter" in status, status


def test_policy_flag_binds_a_certificate_to_a_policy_file(tmp_path, safe):
    _, certs = safe
    code, out, _ = certify(tmp_path, [certs["C1"]], "--policy", str(SAFE))
    assert code == 0 and "confirmed" in out and "seed-safe-design sha256:" in out
    assert_rejected(tmp_path, [certs["C1"]], "not the given seed-recency-frequency", "--policy", str(FLAWED))
    deployment = tmp_path / "deployment.yaml"
    deployment.write_text("records: window\n", encoding="utf-8")
    assert_rejected(tmp_path, [certs["C1"]], "policy: the certificate is for policy seed-safe-design",
                    "--policy", str(SAFE), "--deployment", str(deployment))


# Variants: whatever is not one closed, well-sorted definition of Inv over its parameters.

BODIES = [
    ("true)\n(push 1)\n(assert false)\n(check-sat)\n(pop 1", "a second command"),
    ("true) (set-option :produce-models true", "a keyword"),
    ("true ; (assert false)\n", "a comment"),
    ("clock@pre", "the model's symbol clock@pre"),
    ("(= act@a do_compact)", "the model's symbol act@a"),
    ("Init", "the model's symbol Init"),
    ("(Trans)", "the model's symbol Trans"),
    ("|Bad|", "a quoted |symbol|"),
    ('(= "a" "a")', "a string literal"),
    ("(! true :named x)", "a keyword"),
    ("(! true)", "the symbol !"),
    ("(= kind_r@p 0)", "has sort Int, not Kind"),
    ("(+ used_r@p 1)", "has sort Bool, not Int"),
    ("(= kind_r@p window)", "has sort Namespace, not Kind"),
    ("clock@p", "has sort Int, not Bool"),
    ("(ite used_r@p 1 true)", "ill-sorted ite"),
    ("(> clock@p -1)", "the symbol -1"),
    ("(> clock@p 1.5)", "the symbol 1.5"),
    ("(> clock@p 01)", "the symbol 01"),
    ("(> clock@p #x01)", "binary or hex"),
    ("(forall ((x Int)) (> x 0))", "the symbol forall"),
    ("(exists ((x Int)) false)", "the symbol exists"),
    ("(= kind_r@p (as message Kind))", "the symbol as"),
    ("(let ((used_r@p false)) (not used_r@p))", "let name used_r@p"),
    ("(let ((Bad true)) Bad)", "let name Bad"),
    ("(let ((and true)) and)", "let name and"),
    ("(let ((x true) (x false)) x)", "let name x"),
    ("(let ((x true)) (let ((x false)) x))", "let name x"),
    ("(tru\u0435)", "U+0435"),
    ("(and true\u00a0true)", "U+00A0"),
    ("(and true \u200btrue)", "U+200B"),
    ("(Inv clock@p)", "the symbol Inv"),
    ("(and)", "takes 1+ argument"),
    ("(not true false)", "takes 1 argument"),
    ("()", "empty application"),
    ("((and) true)", "neither a symbol nor a tester"),
    ("((_ is record) ns_r@p)", "takes one argument of sort Kind"),
    ("((_ is Bad) kind_r@p)", "neither a symbol nor a tester"),
    ("((_ is record) kind_r@p kind_q@p)", "takes one argument"),
    ("(message)", "message applied as a function"),
    ("(and true", "unclosed"),
    ("true))", "unbalanced"),
    ("(and " + "y" * 5000 + " true)", "the symbol yyyy"),
]


@pytest.mark.parametrize("body,fragment", BODIES, ids=[str(i) for i in range(len(BODIES))])
def test_an_invariant_outside_the_term_language_is_rejected(tmp_path, flawed, body, fragment):
    policy, certs = flawed
    assert_rejected(tmp_path, [forge(certs["P1"], policy, "C1", body=body)], fragment)


def _definition(enc, params=None, result="Bool", head="define-fun Inv", body="true"):
    return f"({head} ({_params(enc) if params is None else params}) {result} {body})"


def _definitions(policy):
    enc = Encoding(policy, "C1", True)
    pairs = [(v.sexpr(), v.sort().name()) for v in enc.param.variables()]
    show = lambda ps: " ".join(f"({n} {s})" for n, s in ps)  # noqa: E731
    swapped = [pairs[1], pairs[0]] + pairs[2:]
    renamed = [("clock@pre", "Int")] + pairs[1:]
    resorted = [(pairs[0][0], "Real")] + pairs[1:]
    return [
        (_definition(enc, params=show(swapped)), "parameter 1"),
        (_definition(enc, params=show(renamed)), "parameter 1"),
        (_definition(enc, params=show(resorted)), "parameter 1"),
        (_definition(enc, params=show(pairs[:-1])), "parameters"),
        (_definition(enc, params=show(pairs + [("extra", "Int")])), "parameters"),
        (_definition(enc, result="Int", body="0"), "result sort"),
        (_definition(enc, head="define-fun-rec Inv"), "not define-fun"),
        (_definition(enc, head="define-fun Inv2"), "expected (define-fun Inv"),
        ("(declare-fun x () Bool)\n" + _definition(enc), "a second command"),
        ("(push 1)" + _definition(enc), "a second command"),
        ("(define-fun Inv () Bool true)", "Inv has 0 parameters"),
        ("", "empty"),
        ("true", "is not define-fun"),
    ]


def test_definitions_of_the_wrong_shape_are_rejected(tmp_path, flawed):
    policy, certs = flawed
    for text, fragment in _definitions(policy):
        assert_rejected(tmp_path, [forge(certs["P1"], policy, "C1", invariant=text)], fragment)


def test_a_huge_or_deeply_nested_term_is_refused_in_one_line(tmp_path, flawed):
    policy, certs = flawed
    huge = "(and " + "true " * 300_000 + ")"
    deep = "(not " * 100_000 + "true" + ")" * 100_000
    wide_deep = "(and " * 129 + "true" + ")" * 129
    for body, fragment in ((huge, "longer than"), (deep, "nested deeper than"), (wide_deep, "nested deeper than")):
        assert_rejected(tmp_path, [forge(certs["P1"], policy, "C1", body=body)], fragment)


@pytest.mark.parametrize("field,value,fragment", [
    ("free_policy", "true", "free_policy: not true or false"),
    ("free_policy", 1, "free_policy: not true or false"),
    ("assume", "C2", "assume: not a list"),
    ("assume", ["C2", "C2"], "listed twice"),
    ("assume", ["C9"], "assume: not a list of condition ids"),
    ("condition", "c1", "condition: not one of"),
    ("format", "prunecheck-certificate/2", "format"),
    ("engine", ["induction"], "engine"),
    ("invariant", "x", "invariant: not a list of strings"),
    ("policy", {"name": "x"}, "policy:"),
    ("policy_hash", 0, "policy_hash: not a string"),
    ("invariant_smt2", ["(define-fun Inv"], "invariant_smt2: not a string"),
    ("comment", "trust me", "unknown field comment"),
])
def test_every_field_is_validated(tmp_path, flawed, field, value, fragment):
    doc = copy.deepcopy(flawed[1]["P1"])
    doc[field] = value
    assert_rejected(tmp_path, [doc], fragment)


def test_a_missing_field_is_rejected(tmp_path, flawed):
    doc = copy.deepcopy(flawed[1]["P1"])
    del doc["model_smt2"]
    assert_rejected(tmp_path, [doc], "missing field model_smt2")


def test_an_unreadable_certificate_is_an_input_error(tmp_path):
    code, out, err = certify(tmp_path, ["[1, 2"])
    assert code == 2 and err.count("\n") == 1 and "cert0.json:1:" in err
    code, out, err = certify(tmp_path, ["[" * 200_000])
    assert code == 2 and err.count("\n") == 1 and "not JSON" in err
    code, out, err = certify(tmp_path, ["{}"], "--deployment", str(SAFE))
    assert code == 2 and "--deployment needs --policy" in err


def test_a_json_value_that_is_no_certificate_is_an_input_error(tmp_path):
    """A file that does not claim to be a certificate (no `format`) is the wrong file, as `explain CERT` is: exit 2.
    One that claims to be, whatever its fields, is checked and rejected (exit 1)."""
    for text in ("[1, 2]", "{}"):
        code, out, err = certify(tmp_path, [text])
        assert code == 2 and out == "" and err.count("\n") == 1 and "cert0.json:1:1: not a proof certificate" in err
    code, out, err = certify(tmp_path, [{"format": "forged"}])
    assert code == 1 and "rejected (" in out


TRACE_LIKE = {"#meta": {"format": "ITF", "prunecheck": {"condition": "C1"}}, "vars": [], "states": []}
CERTIFICATE_LIKE = {"format": "prunecheck-certificate/1", "condition": "C1"}


def test_a_file_of_the_wrong_kind_is_an_input_error_for_every_command_that_reads_one(tmp_path):
    trace, cert = tmp_path / "t.itf.json", tmp_path / "c.cert.json"
    trace.write_text(json.dumps(TRACE_LIKE))
    cert.write_text(json.dumps(CERTIFICATE_LIKE))
    commands = [(["certify", str(trace)], trace, "not a proof certificate: it is an ITF trace")]
    commands += [([command, str(cert), *extra], cert, "not an ITF trace written by `prunecheck check --out`: it is a "
                  "proof certificate") for command, extra in (("explain", ()), ("replay", ()),
                                                              ("graph", ("--out", str(tmp_path / "g.dot"))))]
    for argv, path, message in commands:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(argv, out, err)
        assert (code, out.getvalue()) == (2, ""), (argv, code, err.getvalue())
        assert err.getvalue() == f"prunecheck: error: {path}:1:1: {err.getvalue().split(':1:1: ', 1)[1]}"
        assert err.getvalue().count("\n") == 1 and message in err.getvalue(), err.getvalue()


# Assumptions: explicit, discharged by certificates in the set, never circular.

def _assuming(certs, policy, condition, other):
    return forge(certs[condition], policy, condition, assume=[other])


def test_assumptions_need_certificates_and_are_listed(tmp_path, safe):
    policy, certs = safe
    c1 = _assuming(certs, policy, "C1", "C2")
    assert_rejected(tmp_path, [c1], "C2 is assumed, but no certificate for C2")
    code, out, _ = certify(tmp_path, [c1, certs["C2"]])
    assert code == 0 and "assumes C2: discharged by " + str(tmp_path / "cert1.json") in out
    assert out.count("confirmed (") == 2


def test_assumption_cycles_are_rejected(tmp_path, safe):
    policy, certs = safe
    c1, c2 = _assuming(certs, policy, "C1", "C2"), _assuming(certs, policy, "C2", "C1")
    for doc in (c1, c2):  # each is sound relative to its assumption...
        assert recheck(doc, Encoding(policy, doc["condition"], True, doc["assume"])).status == Status.CONFIRMED
    code, out, _ = certify(tmp_path, [c1, c2])  # ...but together they prove nothing
    lines = _status_lines(out)
    assert code == 1 and len(lines) == 2 and all("rejected (assume: circular assumptions" in x for x in lines), out
    # With C2 proved outright, the cycle is not needed: each assumption is discharged by a confirmed certificate.
    code, out, _ = certify(tmp_path, [c1, c2, certs["C2"]])
    assert code == 0 and out.count("confirmed (") == 3


def test_an_assumption_is_discharged_only_by_the_same_policy(tmp_path, safe):
    policy, certs = safe
    other = copy.deepcopy(certs["C2"])
    other["policy"]["name"] = "another"
    other["policy_hash"] = policy_hash(load_policy_text(other["policy"]))
    code, out, _ = certify(tmp_path, [_assuming(certs, policy, "C1", "C2"), other])
    assert code == 1 and "no certificate for C2 of the same policy" in out


def test_a_concrete_proof_does_not_discharge_a_free_policy_assumption(tmp_path, safe):
    policy, certs = safe
    dependent = _assuming(certs, policy, "C1", "C2")
    concrete = forge(certs["C2"], policy, "C2", free_policy=False)
    assert recheck(concrete, Encoding(policy, "C2", False)).status == Status.CONFIRMED
    code, out, _ = certify(tmp_path, [dependent, concrete])
    assert code == 1 and "no certificate for C2 of the same policy" in out
    # The other way round is sound: a free-policy proof covers the concrete model.
    concrete_dependent = forge(certs["C1"], policy, "C1", free_policy=False, assume=["C2"])
    code, out, _ = certify(tmp_path, [concrete_dependent, certs["C2"]])
    assert code == 0, out


def load_policy_text(doc):
    from prunecheck.checker.language.loader import parse_policy_text

    return parse_policy_text(json.dumps(doc), "p.json")


# Genuine certificates stay confirmed.

@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.iterdir() if p.suffix != ".toml"), ids=lambda p: p.name)
def test_genuine_certificates_of_every_example_are_confirmed(tmp_path, path):
    policy = load_policy(path)
    report = check(policy, CheckOptions(depth=4, spans=4, **BOUNDS))
    docs = [r.certificate for r in report.results if r.certificate]
    assert docs, f"{path.name} has no proved condition"
    code, out, _ = certify(tmp_path, docs, "--policy", str(path))
    assert code == 0 and out.count("confirmed (") == len(docs), out
    for r in report.results:
        if r.certificate:
            check_ = confirm_certificate(r.certificate, policy, r.condition, **CERT_BOUNDS)
            assert check_.status == Status.CONFIRMED, check_.reason


def test_confirm_certificate_binds_text_policy_and_condition(flawed, safe):
    policy, certs = safe
    text = json.dumps(certs["C1"])
    assert confirm_certificate(text, policy, "C1", **CERT_BOUNDS).status == Status.CONFIRMED
    assert confirm_certificate(text, policy, "C2", **CERT_BOUNDS).status == Status.REJECTED
    assert confirm_certificate(text, flawed[0], "C1", **CERT_BOUNDS).status == Status.REJECTED
    assert confirm_certificate(text[:-2], policy, "C1", **CERT_BOUNDS).status == Status.REJECTED
    assuming = json.dumps(_assuming(certs, policy, "C1", "C2"))
    assert "assume" in confirm_certificate(assuming, policy, "C1", **CERT_BOUNDS).reason


def test_a_solver_that_gives_up_leaves_a_certificate_unchecked(tmp_path, safe):
    _, certs = safe
    clear_caches()
    out, err = io.StringIO(), io.StringIO()
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(certs["C1"]), encoding="utf-8")
    code = cli.main(["certify", str(path), "--rlimit", "1"], out, err)
    assert code == 3 and "unchecked (" in out.getvalue(), out.getvalue()
    clear_caches()


# Mutations: nothing is ever confirmed for a condition with a replayed counterexample.

def _line_edit(text: str, data) -> str:
    lines = text.split("\n")
    i = data.draw(st.integers(0, len(lines) - 1))
    kind = data.draw(st.sampled_from(["delete", "duplicate", "swap"]))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    else:
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _char_edit(text: str, data) -> str:
    i = data.draw(st.integers(0, max(0, len(text) - 1)))
    ch = data.draw(st.sampled_from(list("()ptf01 -=<>!\n;|\"") + ["true", "false", "(not ", "Bad", "\u0435"]))
    kind = data.draw(st.sampled_from(["insert", "replace", "delete"]))
    if kind == "insert":
        return text[:i] + ch + text[i:]
    if kind == "replace":
        return text[:i] + ch + text[i + 1:]
    return text[:i] + text[i + 1:]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_mutated_certificate_is_confirmed_for_a_violated_condition(flawed, safe, data):
    policy, certs = flawed
    sources = [certs[c] for c in sorted(certs)] + [safe[1][c] for c in sorted(safe[1])]
    doc = copy.deepcopy(data.draw(st.sampled_from(sources)))
    condition = data.draw(st.sampled_from(VIOLATED))
    # The attacker relabels first: flawed policy, violated condition, honestly regenerated model.
    doc["policy"], doc["policy_hash"] = copy.deepcopy(certs["P1"]["policy"]), certs["P1"]["policy_hash"]
    free = data.draw(st.booleans())
    assume = data.draw(st.lists(st.sampled_from(["C1", "C2", "C3", "C4", "P1"]), unique=True, max_size=2))
    doc = forge(doc, policy, condition, assume=[a for a in assume if a != condition], free_policy=free)
    enc = Encoding(policy, condition, free)
    replacement = data.draw(st.sampled_from(["keep", "true", "false", "notbad", "other"]))
    if replacement == "true" or replacement == "false":
        doc["invariant_smt2"] = _definition(enc, body=replacement)
    elif replacement == "notbad":
        other = data.draw(st.sampled_from(["C1", "C4", "P1"]))
        doc["invariant_smt2"] = _definition(enc, body=z3.Not(enc.violation(other, enc.param)).sexpr())
    elif replacement == "other":
        doc["invariant_smt2"] = data.draw(st.sampled_from(sources))["invariant_smt2"]
    for _ in range(data.draw(st.integers(0, 3))):
        edit = data.draw(st.sampled_from(["char", "line", "field"]))
        if edit == "char":
            doc["invariant_smt2"] = _char_edit(doc["invariant_smt2"], data)
        elif edit == "line":
            doc["invariant_smt2"] = _line_edit(doc["invariant_smt2"], data)
        else:
            key = data.draw(st.sampled_from(["free_policy", "assume", "condition", "policy_hash"]))
            doc[key] = data.draw(st.sampled_from([True, False, "true", [], ["C1"], ["C2", "C4"], "C1", "C2", "C4",
                                                  certs["P1"]["policy_hash"], "0" * 64]))
    texts = [json.dumps(doc), _char_edit(json.dumps(doc), data)]
    for text in texts:
        for c in VIOLATED:
            status = confirm_certificate(text, policy, c, **CERT_BOUNDS).status
            event(f"{status}")
            assert status != Status.CONFIRMED
    set_of = [(f"m{i}", json.loads(t)) for i, t in enumerate(texts[:1])] + \
        [(c, certs[c]) for c in sorted(certs)]
    flawed_hash = certs["P1"]["policy_hash"]
    for v in certify_set(set_of, **CERT_BOUNDS):
        assert not (v.status == Status.CONFIRMED and v.policy_hash == flawed_hash and v.condition in VIOLATED), v


def test_a_proof_only_z3_rechecks_is_unknown_not_holds(monkeypatch, safe):
    from prunecheck.checker.engines import certificate
    from prunecheck.checker.language.document import policy_document
    from prunecheck.checker.engines.prove import prove

    policy, _ = safe
    clear_caches()
    monkeypatch.setattr(certificate, "_ask_cvc5", lambda prefix, queries, *_: ["unknown"] * len(queries))
    result = prove(policy, "C1", policy_document(policy), policy_hash(policy), **BOUNDS)
    clear_caches()
    assert result.verdict == Verdict.UNKNOWN and result.certificate is None
    said = reason_text(result.reason)
    assert "not confirmed: cvc5 gave up on initiation, consecution, safety; z3 alone proves them" in said


@pytest.mark.parametrize("condition", ["C1", "P1"])
def test_spacer_certificates_with_datatype_testers_are_confirmed(safe, condition):
    from prunecheck.checker.language.document import policy_document
    from prunecheck.checker.engines.spacer import prove_with_spacer

    policy, _ = safe
    result = prove_with_spacer(policy, condition, policy_document(policy), policy_hash(policy), **BOUNDS)
    assert result.verdict == Verdict.HOLDS, reason_text(result.reason)
    assert "(_ is " in json.loads(result.certificate)["invariant_smt2"]
    assert confirm_certificate(result.certificate, policy, condition, **CERT_BOUNDS).status == Status.CONFIRMED
