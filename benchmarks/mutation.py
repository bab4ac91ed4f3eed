"""Mutation testing: plant one fault at a time in a copy of the package and report how many the tests kill.

Run: python benchmarks/mutation.py [--jobs 2] [--only NAME,NAME] [--write benchmarks/MUTATION.md [--append]]
     python benchmarks/mutation.py --list | --verify-texts | --baseline
Each mutant is a textual edit of one source file, applied to a temporary copy of the package that shadows the
installed one (PYTHONPATH). Each names its own small test selection, the tests most likely to kill it, and a broader
fallback run only if the selection does not; both run with -x -n 0, so a killed mutant stops at its first failing test.
A mutant still running at --timeout is reported as `timeout`, which does not count as killed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"spec": "prunecheck/spec", "symbolic": "prunecheck/symbolic", "checker": "prunecheck/checker",
            "proofs": "prunecheck/proofs"}
AREAS = ("runtime", "model", "pair model", "engines", "certificate", "cache", "parser", "outputs")
KILLERS = "tests/test_mutation_killers.py"
# Tests whose solver queries are bounded in seconds: under a loaded CPU they fail without any mutant, which would
# count as a kill, so no run includes them.
DESELECT = ("tests/test_examples.py::test_late_violation_is_found_when_the_depth_reaches_it",)


class Mutant(NamedTuple):
    name: str
    area: str  # one of AREAS
    fault: str  # the realistic fault it models, one line
    path: str  # source file, relative to the repository
    old: str  # text that occurs exactly once in path
    new: str
    tests: tuple  # pytest arguments: the small selection most likely to kill it
    fallback: tuple = ()  # a broader selection, run only if `tests` does not kill; () means the area's
    survivor: str = ""  # if it survives: why that is no missed fault ("equivalent mutant: ..."), one line


class Pending(NamedTuple):
    """A mutant whose text waits for the certificate/cache rework to land: described, neither run nor counted."""

    name: str
    area: str
    path: str
    fault: str


# The broader selections, per area: test files that exercise it end to end without the slow markers.
FALLBACK = {
    "runtime": ("tests/test_runtime.py", "tests/test_model.py"),
    "model": ("tests/test_model.py", "tests/test_examples.py", KILLERS),
    "pair model": ("tests/test_parametric.py", "tests/test_prove.py"),
    "engines": ("tests/test_examples.py", "tests/test_prove.py", "tests/test_explain.py", KILLERS),
    "certificate": ("tests/test_prove.py", "tests/test_theorems.py"),
    "cache": ("tests/test_batch.py", "tests/test_caches.py", KILLERS),
    "parser": ("tests/test_parser.py", "tests/test_hostile.py", "tests/test_strategies.py"),
    "outputs": ("tests/test_explain.py", "tests/test_cli.py", "tests/test_policydiff.py", "tests/test_repair.py"),
}

M = Mutant
MUTANTS = [
    # ------------------------------------------------------------------ the N-slot model
    M("edit-guard-dropped", "model", "drop a guard: edits may target spans outside the window namespace",
      "symbolic/model.py",
      'z3.And(sel["used"], sel["alive"], sel["ns"] == NS["window"],\n'
      '                                                  sel["content"], room_for_two)',
      'z3.And(sel["used"], sel["alive"], room_for_two)',
      ("tests/test_model.py::test_houdini_drops_lemmas_that_fail_in_unsafe_deployments",
       "tests/test_model.py::test_targeted_runs_agree")),
    M("truncation-comparison", "model", "flip a comparison: truncate while the window is at or over budget",
      "symbolic/model.py",
      "truncated.append(z3.And(limited, remaining[i], rest - older > limit))",
      "truncated.append(z3.And(limited, remaining[i], rest - older >= limit))",
      ("tests/test_model.py::test_targeted_runs_agree",
       "tests/test_model.py::test_model_and_runtime_agree_on_every_state_and_condition")),
    M("pinned-frame-forgotten", "model", "forget a frame condition: a span's pin is lost on every step",
      "symbolic/model.py",
      'becomes("pinned", (appended, False),', 'becomes("pinned", (z3.BoolVal(True), False), (appended, False),',
      ("tests/test_model.py::test_targeted_runs_agree",
       "tests/test_model.py::test_model_and_runtime_agree_on_every_state_and_condition")),
    M("audit-sees-window", "model", "let the independent audit see only the window", "symbolic/model.py",
      'if self.dep.audit == "independent":\n            return z3.Not(self.gap(t))',
      'if False:\n            return z3.Not(self.gap(t))',
      (f"{KILLERS}::test_model_and_runtime_agree_after_records_die",
       "tests/test_model.py::test_model_and_runtime_agree_on_every_state_and_condition")),
    M("c1-ignores-liveness", "model", "C1 also counts records of undone edits", "symbolic/conditions.py",
      "z3.Or([z3.And(g.live_edit(i), model.candidate(g, i)) for i in range(model.n)])",
      "z3.Or([z3.And(g.is_record(i), model.candidate(g, i)) for i in range(model.n)])",
      (f"{KILLERS}::test_model_and_runtime_agree_after_records_die", "tests/test_model.py::test_targeted_runs_agree")),
    M("compare-cross-multiplication", "model", "compare fractions without clearing denominators", "symbolic/terms.py",
      "left, right = x.scaled_num(y.den), y.scaled_num(x.den)", "left, right = x.num, y.num",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("encoder-abs-flipped", "model", "flip a comparison: abs negates non-positive values the wrong way round",
      "symbolic/terms.py",
      "return Frac(z3.If(x.num >= 0, x.num, -x.num), x.den)", "return Frac(z3.If(x.num <= 0, x.num, -x.num), x.den)",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("encoder-min-is-max", "model", "swapped operand: the encoder's min keeps the larger argument",
      "symbolic/terms.py",
      'keep = frac_compare("<=" if expr.fn == "min" else ">=", best, other)',
      'keep = frac_compare(">=" if expr.fn == "min" else "<=", best, other)',
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("encoder-cond-branches-swapped", "model", "swapped operands: a numeric conditional takes the wrong branch",
      "symbolic/terms.py", "return frac_ite(test, then, orelse)", "return frac_ite(test, orelse, then)",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("encoder-not-equal-is-equal", "model", "dropped negation: `!=` is encoded as `==`", "symbolic/terms.py",
      'return same if op == "==" else z3.Not(same)', "return same",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("encoder-negative-divisor", "model", "a skipped sign fix: dividing by a negative literal leaves a negative "
      "denominator, which flips every comparison", "symbolic/terms.py",
      "return Frac(num, den) if y.num.as_long() > 0 else Frac(-num, -den)", "return Frac(num, den)",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("lemma-record-namespace-swapped", "model", "wrong default: the record-namespace lemma names the other region",
      "symbolic/lemmas.py",
      'record_ns = NS["undo"] if dep.records == "undo_region" else NS["window"]',
      'record_ns = NS["window"] if dep.records == "undo_region" else NS["undo"]',
      ("tests/test_model.py::test_houdini_drops_lemmas_that_fail_in_unsafe_deployments",
       "tests/test_model.py::test_proved_lemmas_exclude_no_reachable_state")),
    # ------------------------------------------------------------------ the pair model
    M("pair-blind-undo-checks", "pair model", "unsound abstraction: a blind undo still checks freshness",
      "symbolic/parametric.py",
      'a.fresh if self.dep.undo == "versioned" else z3.BoolVal(True)', "a.fresh",
      ("tests/test_parametric.py::test_targeted_runs_project_onto_every_pair",)),
    M("pair-no-truncation", "pair model", "unsound abstraction: a host budget never truncates the pair",
      "symbolic/parametric.py",
      'truncated = z3.And(f["alive"], f["ns"] == NS["window"], z3.Not(evicted), a.truncate[g])',
      "truncated = z3.BoolVal(False)",
      ("tests/test_parametric.py",)),
    M("pair-lemma-record-namespace-swapped", "pair model",
      "wrong default: the pair model's record-namespace lemma names the other region", "symbolic/pair_lemmas.py",
      'record_ns = NS["undo"] if dep.records == "undo_region" else NS["window"]',
      'record_ns = NS["window"] if dep.records == "undo_region" else NS["undo"]',
      ("tests/test_prove.py::test_prover_proves_exactly_the_conditions_expected_to_hold",)),
    M("pair-lemma-record-rationale-or", "pair model",
      "wrong connective: the lemma `record r is followed by its rationale q` only asks q to be used or a rationale",
      "symbolic/pair_lemmas.py",
      '("record_r_then_rationale_q", z3.Implies(s.is_record("r"), z3.And(sp["q"]["used"],',
      '("record_r_then_rationale_q", z3.Implies(s.is_record("r"), z3.Or(sp["q"]["used"],',
      ("tests/test_prove.py::test_prover_proves_exactly_the_conditions_expected_to_hold",)),
    # ------------------------------------------------------------------ the runtime and the conditions
    M("runtime-undo-unversioned", "runtime", "the runtime's undo skips the version check", "spec/runtime.py",
      'if policy.deployment.undo == "versioned" and target.version != info.version:', "if False:",
      ("tests/test_runtime.py::test_undo_of_a_re_edited_target_under_versioned_undo_requires_a_merge",)),
    M("runtime-status-blind", "runtime", "the runtime's status ignores dead records", "spec/runtime.py",
      "return REVERSIBLE if all(state.span(e.record).alive for e in known) else UNKNOWN", "return REVERSIBLE",
      ("tests/test_runtime.py::test_independent_audit_reports_unknown_whenever_a_live_record_is_gone",)),
    M("c2-counts-dead-records", "runtime", "dropped guard: C2 blames a compaction for a record that was already gone",
      "spec/conditions.py",
      "before.span(e.record).alive and not after.span(e.record).alive for e in before.edits)",
      "not after.span(e.record).alive for e in before.edits)",
      (f"{KILLERS}::test_model_and_runtime_agree_after_records_die",)),
    M("c3-any-undo-outcome", "runtime", "dropped guard: C3 blames an undo that was refused as a merge",
      "spec/conditions.py",
      'if not (isinstance(transition.action, Undo) and transition.outcome == "reverted"):',
      "if not isinstance(transition.action, Undo):",
      ("tests/test_runtime.py",)),
    M("c4-gap-counts-undone-edits", "runtime", "C4's gap also counts the dead records of undone edits",
      "spec/conditions.py",
      "gap = any(not state.span(e.record).alive for e in state.live_edits())",
      "gap = any(not state.span(e.record).alive for e in state.edits)",
      (f"{KILLERS}::test_model_and_runtime_agree_after_records_die",)),
    M("evaluate-min-is-max", "runtime", "swapped function: the evaluator's min returns the maximum",
      "spec/evaluate.py", 'if expr.fn == "min":\n            return min(args)',
      'if expr.fn == "min":\n            return max(args)',
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("evaluate-floor-division", "runtime", "integer division: the evaluator floors quotients",
      "spec/evaluate.py", "return Fraction(left) / Fraction(right)", "return Fraction(left // right)",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    M("evaluate-in-means-all", "runtime", "wrong quantifier: `x in [a, b]` requires x to equal every value",
      "spec/evaluate.py", "return any(value == self.visit(v, env) for v in expr.values)",
      "return all(value == self.visit(v, env) for v in expr.values)",
      (f"{KILLERS}::test_the_encoder_agrees_with_the_evaluator",)),
    # ------------------------------------------------------------------ engines
    M("replay-skipped", "engines", "counterexamples are reported without a replay", "checker/engines/bmc.py",
      "transitions = confirm(policy, trace_actions, condition, spans, symbolic)", "transitions = []",
      (f"{KILLERS}::test_a_witness_searched_under_assumptions_is_replayed_too",
       "tests/test_examples.py::test_a_counterexample_the_runtime_does_not_reproduce_is_never_reported")),
    M("houdini-trusts-init", "engines", "Houdini keeps candidates without checking consecution",
      "checker/engines/invariants.py",
      "    phases = ([] if init is None else [(list(init), at_init)]) + [(list(step), after)]",
      "    phases = ([] if init is None else [(list(init), at_init)])",
      ("tests/test_model.py::test_houdini_drops_lemmas_that_fail_in_unsafe_deployments",)),
    M("houdini-unknown-as-unsat", "engines", "unknown read as unsat: Houdini keeps every candidate when z3 gives up",
      "checker/engines/invariants.py",
      "return Invariant((), rounds, False, answer.reason)", "break",
      (f"{KILLERS}::test_houdini_that_gives_up_proves_nothing",)),
    M("solver-unknown-as-unsat", "engines", "unknown read as unsat in the one query function", "symbolic/solver.py",
      'return Answer(Status.UNKNOWN, solver.reason_unknown() or "unknown", seconds)',
      'return Answer(Status.UNSAT, "", seconds)',
      (f"{KILLERS}::test_a_query_that_runs_out_of_resources_is_unknown",)),
    M("replay-first-violation-off-by-one", "engines", "off-by-one: the first violating step is numbered from 0",
      "checker/engines/replay.py",
      "        if condition in violations(policy, transition):\n            return index + 1",
      "        if condition in violations(policy, transition):\n            return index",
      ("tests/test_explain.py::test_reduction_keeps_the_violation_and_never_lengthens",
       "tests/test_examples.py::test_seed_flawed_policy_violates_c1_within_8_steps")),
    M("replay-accepts-early-violation", "engines",
      "a weakened check: a counterexample is confirmed if it violates anywhere, not exactly at its last step",
      "checker/engines/replay.py", "if where != len(actions):", "if where is None:",
      (f"{KILLERS}::test_a_counterexample_is_confirmed_only_if_it_violates_exactly_at_its_end",)),
    M("decode-edit-mode-swapped", "engines", "swapped operands: a decoded edit's destroy flag means transform",
      "checker/engines/replay.py",
      'return Edit(arg, "destroy" if _bool(model, a.destroy) else "transform")',
      'return Edit(arg, "transform" if _bool(model, a.destroy) else "destroy")',
      ("tests/test_examples.py::test_seed_flawed_policy_violates_c1_within_8_steps",
       "tests/test_explain.py::test_distinct_counterexamples_differ_in_their_action_sequences")),
    M("prove-safety-without-lemmas", "engines", "a dropped assumption: the safety check forgets the proved lemmas",
      "checker/engines/prove.py", "        solver.add([before[n] for n in names])\n", "",
      ("tests/test_prove.py::test_prover_proves_exactly_the_conditions_expected_to_hold",)),
    M("shared-proof-key-ignores-deployment", "cache",
      "a key too coarse: a proof over the abstracted policy is shared between deployments",
      "checker/engines/certificate_model.py",
      "    return (policy.deployment, policy.rank is not None", "    return (policy.rank is not None",
      ("tests/test_caches.py::test_a_shared_proof_certifies_the_policy_it_is_reported_for", "tests/test_caches.py")),
    M("prove-unconfirmed-certificate-holds", "engines",
      "a weakened check: a refuted or unchecked certificate still yields holds (only a malformed one does not)",
      "checker/engines/prove.py", "if check.status == Status.CONFIRMED:", "if check.status != Status.REJECTED:",
      (f"{KILLERS}::test_a_certificate_the_recheck_refutes_is_never_holds",)),
    M("spacer-invariant-misplaced", "engines",
      "swapped operands: Spacer's invariant is read back over the parameters in reverse order",
      "checker/engines/spacer.py",
      'return Found.PROVED, z3.substitute_vars(body, *param).translate(z3.main_ctx()), None',
      'return Found.PROVED, z3.substitute_vars(body, *reversed(param)).translate(z3.main_ctx()), None',
      (f"{KILLERS}::test_spacer_proves_with_a_confirmed_certificate",)),
    M("spacer-free-policy-only", "engines", "a dropped case: Spacer never tries the policy's own expressions",
      "checker/engines/spacer.py", "    for free_policy in (True, False):\n        left = timeout",
      "    for free_policy in (True,):\n        left = timeout",
      (f"{KILLERS}::test_spacer_proves_with_a_confirmed_certificate",)),
    M("check-quick-unknown-as-refuted", "engines",
      "a widened filter: a quick search that gave up counts as a refutation, so the deep search never runs",
      "checker/check.py",
      "refuted = {r.condition: r for r in quick if r.verdict == Verdict.VIOLATED}",
      "refuted = {r.condition: r for r in quick if r.verdict != Verdict.HOLDS}",
      ("tests/test_cli.py::test_safe_policy_is_proved_and_exits_0",)),
    # ------------------------------------------------------------------ certificates
    M("certificate-safety-skipped", "certificate", "the certificate re-check forgets the safety obligation",
      "checker/engines/certificate_model.py",
      '"safety": safety + ["(assert Bad)"],', '"safety": safety,',
      ("tests/test_prove.py::test_prover_proves_exactly_the_conditions_expected_to_hold",)),
    M("reader-second-command", "certificate", "the SMT-LIB reader accepts a second command after define-fun Inv",
      "checker/engines/smtlib.py", "    if len(commands) > 1:\n", "    if False:\n",
      ("tests/test_certificates.py::test_a_second_command_after_inv_is_rejected",)),
    M("reader-global-symbol", "certificate", "the invariant may name any symbol (the model's Bad, a pre-state variable)",
      "checker/engines/smtlib.py",
      'raise SmtError(f"{self._describe(name)} at {_at(node)} is not allowed in Inv{_ALLOWED}")',
      'return "Bool"',
      ("tests/test_certificates.py::test_inv_naming_the_models_bad_is_rejected",)),
    M("reader-parameter-sorts-unchecked", "certificate", "Inv's parameter sorts are not compared with the model's",
      "checker/engines/smtlib.py", "        if have != want:", "        if have[0] != want[0]:",
      ("tests/test_certificates.py::test_definitions_of_the_wrong_shape_are_rejected", "tests/test_certificates.py::test_an_invariant_outside_the_term_language_is_rejected")),
    M("assumption-cycle-undetected", "certificate",
      "an assumption is discharged by any certificate of the condition, confirmed or not (cycles confirm themselves)",
      "checker/engines/certificate_set.py", "pick = {x: next((m for m in ms if m in below or m in done), None)",
      "pick = {x: next((m for m in ms), None)",
      ("tests/test_certificates.py::test_assumption_cycles_are_rejected",)),
    M("assumption-other-policy", "certificate", "an assumption is discharged by a certificate for another policy",
      "checker/engines/certificate_set.py",
      "return (other.condition == condition and other.policy_hash == cert.policy_hash\n"
      "            and other.policy_doc == cert.policy_doc and (other.free_policy or not cert.free_policy))",
      "return (other.condition == condition and (other.free_policy or not cert.free_policy))",
      ("tests/test_certificates.py::test_an_assumption_is_discharged_only_by_the_same_policy",)),
    M("assumption-concrete-for-free", "certificate",
      "a concrete-policy proof discharges a free-policy assumption (unsound: it proves a weaker C1 on fewer runs)",
      "checker/engines/certificate_set.py",
      "and other.policy_doc == cert.policy_doc and (other.free_policy or not cert.free_policy))",
      "and other.policy_doc == cert.policy_doc)",
      ("tests/test_certificates.py::test_a_concrete_proof_does_not_discharge_a_free_policy_assumption",)),
    M("policy-hash-not-compared", "certificate", "the hash recomputed from the embedded policy is not compared",
      "checker/engines/certificate.py", '_require(document["policy_hash"] == digest, "policy_hash",',
      '_require(True, "policy_hash",',
      ("tests/test_certificates.py::test_a_zeroed_hash_is_rejected",)),
    M("policy-flag-ignored", "certificate", "certify --policy FILE does not bind certificates to the file's policy",
      "checker/engines/certificate_set.py",
      "    if policy is None:\n        return None\n    from prunecheck.checker.language.document import policy_document",
      "    if True:\n        return None\n    from prunecheck.checker.language.document import policy_document",
      ("tests/test_certificates.py::test_policy_flag_binds_a_certificate_to_a_policy_file",)),
    M("z3-alone-confirms", "certificate", "a certificate cvc5 gives up on but z3 proves counts as confirmed",
      "checker/engines/certificate.py", 'if all(o.cvc5 == "unsat" for o in results):',
      'if all(o.cvc5 == "unsat" or o.z3 == "unsat" for o in results):',
      ("tests/test_certificates.py::test_a_solver_that_gives_up_leaves_a_certificate_unchecked", "tests/test_certificates.py::test_a_proof_only_z3_rechecks_is_unknown_not_holds")),
    # ------------------------------------------------------------------ cache
    M("cached-holds-unchecked", "cache", "a cached holds is believed without its certificate re-checked",
      "checker/outputs/cache.py",
      "problem = _certificate_problem(result.certificate, policy, result.condition, settings)",
      "problem = None",
      ("tests/test_cache_tamper.py::test_a_tampered_entry_is_rejected_and_resolved",)),
    M("cached-trace-not-replayed", "cache", "a cached violated is believed without its trace replayed",
      "checker/outputs/cache.py", "        problem = _trace_problem(policy, trace, result.condition, settings[\"depth\"], settings[\"spans\"])",
      "        problem = None",
      ("tests/test_cache_tamper.py::test_a_tampered_entry_is_rejected_and_resolved",)),
    M("tampered-entry-trusted", "cache", "a cache entry that fails verification is used anyway",
      "checker/outputs/cache.py", "return _rejected(problem) if problem else CacheRead(CacheStatus.HIT, report)",
      "return CacheRead(CacheStatus.HIT, report)",
      ("tests/test_cache_tamper.py::test_a_tampered_entry_is_rejected_and_resolved",)),
    M("policy-hash-ignores-deployment", "cache",
      "a key too coarse: the policy hash covers only the evict expression, so a cached report of one deployment "
      "answers for another", "checker/language/document.py",
      "return hashlib.sha256(repr(policy).encode()).hexdigest()",
      "return hashlib.sha256(repr(policy.evict).encode()).hexdigest()",
      (f"{KILLERS}::test_the_policy_hash_covers_every_field_that_changes_a_verdict",)),
    # ------------------------------------------------------------------ parser and type checker
    M("parser-right-associative", "parser", "off-by-one precedence: `a - b - c` parses as `a - (b - c)`",
      "checker/language/expr_parser.py", "right = self.expr(_BINARY[text] + 1)", "right = self.expr(_BINARY[text])",
      ("tests/test_parser.py", "tests/test_strategies.py::test_printers_round_trip")),
    M("parser-and-or-precedence", "parser", "wrong table entry: `or` binds tighter than `and`",
      "checker/language/expr_parser.py", '_BINARY = {"or": P_OR, "and": P_AND,', '_BINARY = {"or": P_AND, "and": P_OR,',
      ("tests/test_parser.py", "tests/test_strategies.py::test_printers_round_trip")),
    M("parser-not-in-drops-not", "parser", "dropped negation: `x not in [...]` parses as `x in [...]`",
      "checker/language/expr_parser.py",
      "                if negated:\n                    node = self.node(Unary",
      "                if False:\n                    node = self.node(Unary",
      ("tests/test_parser.py::test_not_in_and_enum_sets", "tests/test_parser.py")),
    M("parser-chain-wrong-operand", "parser",
      "off-by-one index: a chained comparison `a < b < c` compares a with c", "checker/language/builder.py",
      "cmp = self.make(Binary, op, operands[k], operands[k + 1], loc=loc",
      "cmp = self.make(Binary, op, operands[0], operands[k + 1], loc=loc",
      ("tests/test_parser.py::test_chained_comparisons_mean_and_in_both_forms", "tests/test_parser.py")),
    M("typecheck-division-by-zero", "parser", "dropped guard: a divisor that can be zero is accepted",
      "checker/language/intervals.py", "        if not _excludes_zero(right):\n", "        if False:\n",
      ("tests/test_parser.py::test_division_by_possibly_zero", "tests/test_parser.py")),
    M("typecheck-closed-zero-excluded", "parser",
      "dropped condition: an interval closed at 0 is taken to exclude 0, so `1 / reads` is accepted",
      "checker/language/intervals.py", "if _key(lo) > (0, 0) or (lo == 0 and lo_open and isinstance(lo, Fraction)):",
      "if _key(lo) > (0, 0) or (lo == 0 and isinstance(lo, Fraction)):",
      ("tests/test_parser.py::test_division_by_possibly_zero", "tests/test_parser.py")),
    M("typecheck-budget-unset", "parser", "dropped guard: `budget` may be referenced by a policy that sets none",
      "checker/language/typecheck.py", 'if node.name == "budget" and not self.has_budget:',
      'if node.name == "budget" and False:',
      ("tests/test_parser.py::test_budget_referenced_without_budget", "tests/test_parser.py")),
    M("typecheck-node-bound-off-by-one", "parser", "off-by-one bound: a policy of exactly MAX_NODES nodes is refused",
      "checker/language/bounds.py", "            if total > MAX_NODES:", "            if total >= MAX_NODES:",
      (f"{KILLERS}::test_the_node_bound_admits_exactly_max_nodes",
       "tests/test_parser.py::test_bounds_on_constructed_asts")),
    M("loader-duplicate-keys", "parser", "dropped guard: a duplicate key silently replaces the first",
      "checker/language/nodes.py", "        if name in seen:\n", "        if False:\n",
      ("tests/test_parser.py::test_duplicate_key", "tests/test_hostile.py")),
    M("loader-yaml-aliases", "parser", "dropped guard: YAML aliases are expanded (alias bombs)",
      "checker/language/nodes.py", "        if isinstance(event, yaml.AliasEvent):", "        if False:",
      ("tests/test_parser.py::test_yaml_alias_and_anchor", "tests/test_hostile.py")),
    M("override-replaces-section", "parser", "wrong base: a deployment override replaces the policy's whole section",
      "spec/policy.py", "        return replace(deployment, **self.as_dict())",
      "        return replace(Deployment(), **self.as_dict())",
      ("tests/test_deployment_override.py",
       "tests/test_parser.py::test_deployment_override_expect_and_deployment_files")),
    M("loader-bom-kept", "parser", "a skipped step: a UTF-8 byte-order mark stays in the text",
      "checker/language/source_text.py",
      '    if text.startswith("\\ufeff"):\n        text = text[1:]\n', "",
      ("tests/test_hostile.py::test_boms_and_line_endings_do_not_move_positions", "tests/test_parser.py")),
    # ------------------------------------------------------------------ outputs
    M("minimize-bisects-upwards", "outputs", "swapped bounds: the token bisection moves away from the smallest count",
      "checker/engines/minimize.py", "best, high = reduced, middle - 1", "best, low = reduced, middle + 1",
      ("tests/test_explain.py::test_large_token_counts_bisect_to_the_smallest_that_still_violates",)),
    M("minimize-keeps-dangling-steps", "outputs",
      "dropped condition: steps that refer to a dropped step's spans are kept", "checker/engines/minimize.py",
      "if position == index or (ref is not None and ref in gone):", "if position == index:",
      ("tests/test_explain.py::test_dropping_a_step_renumbers_later_spans_and_drops_what_referred_to_it",)),
    M("explain-first-part-decides", "outputs", "a skipped evaluation: the first operand of a connective is blamed",
      "checker/findings/explain.py", "decisive = next(p for p in parts if bool(evaluate(p, env)) == want)",
      "decisive = parts[0]",
      (f"{KILLERS}::test_the_deciding_atom_is_the_operand_that_decides",)),
    M("variants-duplicates-kept", "outputs", "dropped guard: a variant that reduces to a known trace is reported again",
      "checker/engines/variants.py", "            if names in seen:\n                continue\n", "",
      ("tests/test_explain.py::test_distinct_counterexamples_differ_in_their_action_sequences",
       "tests/test_explain.py::test_variants_first_look_for_traces_that_do_not_contain_each_other")),
    M("render-evicted-shown-alive", "outputs", "a wrong default: the trace printout shows evicted spans as alive",
      "checker/outputs/render.py", 'flags = [span.namespace, "alive" if span.alive else "EVICTED"]',
      'flags = [span.namespace, "alive"]',
      ("tests/test_cli.py::test_violated_policy_exits_1_with_a_table_and_trace",
       f"{KILLERS}::test_the_trace_printout_marks_evicted_spans")),
    M("policydiff-budget-ignored", "outputs", "dropped guard: policies with different budgets are proved equivalent",
      "checker/commands/policydiff.py", "    if old.budget != new.budget:\n", "    if False:\n",
      ("tests/test_policydiff.py::test_adding_a_budget_truncates_what_the_old_policy_keeps",)),
    M("policydiff-rank-compared-everywhere", "outputs",
      "a lost guard: ranks are compared on every span, not only on candidates", "checker/commands/policydiff.py",
      "constraints, old.budget, old_evict, timeout, rlimit)",
      "constraints, old.budget, z3.BoolVal(True), timeout, rlimit)",
      (f"{KILLERS}::test_ranks_that_differ_only_off_the_candidates_are_equivalent",)),
    M("repair-two-exclusions", "outputs", "off-by-one bound: a repair may combine two evict exclusions",
      "checker/commands/repair.py", 'if sum(c.kind == "exclude" for c in combo) <= 1:',
      'if sum(c.kind == "exclude" for c in combo) <= 2:',
      (f"{KILLERS}::test_repair_candidates_hold_at_most_one_exclusion",
       "tests/test_repair.py::test_changes_are_ordered_text_then_deployment_then_budget_and_only_unsafe_keys_flip")),
]

# Certificate checker and cache faults whose texts depend on the rework in progress (issue 11): the lead fills them
# in as Mutants after the merge. Not run, not counted.
PENDING: list = []  # every planned mutant is written out above


class Outcome(NamedTuple):
    status: str  # killed, survived, timeout, error
    seconds: float
    test: str  # first failing test, or why the run is an error
    stage: str  # selection or fallback


def build(tmp: Path, mutant) -> None:
    """Copy the package into tmp and apply mutant (None: leave it unmutated)."""
    (tmp / "prunecheck").mkdir(parents=True)
    for module in ROOT.glob("*.py"):  # the root package: the repository root's modules
        shutil.copy2(module, tmp / "prunecheck" / module.name)
    for source, target in PACKAGES.items():
        shutil.copytree(ROOT / source, tmp / target, ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is None:
        return
    top, rest = mutant.path.split("/", 1)
    package_path = tmp / PACKAGES[top] / rest
    text = package_path.read_text()
    if text.count(mutant.old) != 1:
        raise SystemExit(f"mutant {mutant.name}: the original text occurs {text.count(mutant.old)} times in "
                         f"{mutant.path}")
    package_path.write_text(text.replace(mutant.old, mutant.new))


def run_pytest(args: tuple, tmp: str, timeout: float):
    """(return code or None on timeout, stdout) of one pytest run on the copy in tmp, killing its process group."""
    env = {**os.environ, "PYTHONPATH": tmp, "CI": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-n", "0", "-p", "no:cacheprovider",
               *(f"--deselect={test}" for test in DESELECT), *args]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, ""
    return proc.returncode, out


def first_failure(out: str) -> str:
    for line in out.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ")[0].replace("|", "\\|")
    return ""


def run(mutant: Mutant, timeout: float, mutate: bool = True) -> Outcome:
    """Run the mutant's selection, then its fallback if the selection does not kill it, within timeout in all."""
    started = time.perf_counter()
    stages = [("selection", mutant.tests), ("fallback", mutant.fallback or FALLBACK[mutant.area])]
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), mutant if mutate else None)
        for stage, args in stages:
            code, out = run_pytest(args, tmp, timeout - (time.perf_counter() - started))
            seconds = time.perf_counter() - started
            if code is None:
                return Outcome("timeout", seconds, "", stage)
            if code in (1, 2, 3):  # failed, interrupted (a collection error), internal error: the tests noticed
                return Outcome("killed", seconds, first_failure(out) or f"pytest exit {code}", stage)
            if code != 0:
                return Outcome("error", seconds, f"the selection does not run (pytest exit {code})", stage)
            if not mutate:
                break
        return Outcome("survived", time.perf_counter() - started, "", stage)


def verify_texts(mutants) -> int:
    """Report every mutant whose original text is not found exactly once, or whose test files are gone."""
    bad = 0
    for m in mutants:
        path = ROOT / m.path
        count = path.read_text().count(m.old) if path.exists() else 0
        problems = [] if count == 1 else [f"original text occurs {count} times in {m.path}"]
        problems += [] if m.area in AREAS else [f"area {m.area!r} is not one of {', '.join(AREAS)}"]
        for arg in m.tests + m.fallback:
            if arg.startswith("tests/") and not (ROOT / arg.split("::")[0]).exists():
                problems.append(f"no test file {arg.split('::')[0]}")
        for problem in problems:
            bad += 1
            print(f"{m.name}: {problem}")
    print(f"{len(mutants)} mutants, {bad} problems; {len(PENDING)} pending mutants not checked")
    return 1 if bad else 0


def table(rows, args, command: str, wall: float) -> str:
    killed = sum(1 for _, o in rows if o.status == "killed")
    counts = {s: sum(1 for _, o in rows if o.status == s) for s in ("survived", "timeout", "error")}
    summary = (f"{killed} of {len(rows)} mutants killed ({100 * killed / max(1, len(rows)):.0f}%); "
               f"{counts['survived']} survived, {counts['timeout']} timed out, {counts['error']} errors; "
               f"{wall:.0f} s wall time with {args.jobs} jobs")
    head = ["## Re-run", ""] if args.append else ["# Mutation testing", ""]
    lines = head + [f"Generated by `{command}` on {time.strftime('%Y-%m-%d')}.", "",
                    "| mutant | area | fault | result | time (s) | first failing test |",
                    "|---|---|---|---|---:|---|"]
    for m, o in rows:
        result = o.status if o.stage == "selection" or o.status != "killed" else "killed (fallback)"
        lines.append(f"| {m.name} | {m.area} | {m.fault} | {result} | {o.seconds:.0f} | {o.test} |")
    lines += ["", summary, ""]
    others = [(m, o) for m, o in rows if o.status != "killed"]
    if others:
        lines += ["## Survivors", ""]
        lines += [f"- {m.name} ({o.status}): {m.survivor or 'no explanation recorded: a missed fault'}"
                  for m, o in others]
        lines.append("")
    if not args.append:
        lines += ["## Pending (not run, not counted)", ""]
        lines += [f"- {p.name} ({p.area}, {p.path}): {p.fault}" for p in PENDING]
        lines.append("")
    return "\n".join(lines), summary


def selected(only) -> list:
    names = [n for item in only for n in item.split(",") if n]
    unknown = set(names) - {m.name for m in MUTANTS}
    if unknown:
        raise SystemExit(f"unknown mutants: {', '.join(sorted(unknown))}")
    return [m for m in MUTANTS if not names or m.name in names]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="comma-separated mutant names (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once, each in its own pytest -n 0")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per mutant, selection and fallback")
    parser.add_argument("--list", action="store_true", help="list the mutants and their selections")
    parser.add_argument("--verify-texts", action="store_true", help="only check that every original text is found")
    parser.add_argument("--baseline", action="store_true", help="run the selections on the unmutated package")
    parser.add_argument("--write", metavar="FILE")
    parser.add_argument("--append", action="store_true", help="append the table to --write (a re-run of some mutants)")
    args = parser.parse_args(argv)
    mutants = selected(args.only)
    if args.list:
        for m in mutants:
            print(f"{m.name:38s} {m.area:11s} {m.path:36s} {' '.join(m.tests)}")
        for p in PENDING:
            print(f"{p.name:38s} {p.area:11s} {p.path:36s} PENDING: {p.fault}")
        return 0
    if args.verify_texts:
        return verify_texts(mutants)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run, m, args.timeout, not args.baseline) for m in mutants]
        for m, future in zip(mutants, futures):
            o = future.result()
            status = ("passes" if o.status == "survived" else "FAILS") if args.baseline else o.status
            print(f"{m.name:38s} {status:9s} {o.stage:9s} {o.seconds:6.0f} s  {o.test}", flush=True)
    rows = [(m, f.result()) for m, f in zip(mutants, futures)]
    if args.baseline:
        failing = [m.name for m, o in rows if o.status != "survived"]
        print(f"baseline: {len(rows) - len(failing)} of {len(rows)} selections pass unmutated"
              + (f"; failing: {', '.join(failing)}" if failing else ""))
        return 1 if failing else 0
    command = " ".join(["python benchmarks/mutation.py"] + (argv if argv is not None else sys.argv[1:]))
    text, summary = table(rows, args, command, time.perf_counter() - started)
    print(summary)
    if args.write:
        if args.append:
            text = Path(args.write).read_text() + "\n" + text
        Path(args.write).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
