"""Runtime runs under a covering array of every setting project onto both pair models (issue 27: no false proof)."""

import random
from functools import lru_cache

import pytest

from prunecheck.spec.conditions import applicable, violations
from prunecheck.spec.policy import (DEPLOYMENT_CHOICES, DEPLOYMENT_NAMES, EFFECTS, ORDERS, PAIRS, ROLES, SIZED,
                                    SUMMARY_AT, SUMMARY_ROLES, Deployment, mentioned_names, read_attributes)
from prunecheck.spec.runtime import (Append, Audit, Compact, Edit, Pin, Read, State, Undo, Unpin, enabled,
                                     enabled_actions, step)

from covering import covering_array, missing_targets
from support import RUN_NAMES, PairEncoding, ProjectedRun, enabled_prefix, model_policy

# Which attribute family the `evict` expression reads: each makes the pair model track different fields (roles,
# positional counters, names, masks) or none at all (a constant). Every one selects something of each targeted run.
VOCABULARY = {
    "constant": "true",
    "plain": "not pinned and age >= 1 and reads <= 1 and idle >= 0",
    "rates": "recency * frequency < 0.5 or 1 / tokens >= 0.5",
    "kinds": "kind in ['record', 'rationale', 'tool_output', 'summary'] or namespace == 'log' or edited",
    "window": "window_tokens > 3 or step >= 4",
    "positional": "from_end >= 1 and position >= 0 or turn >= 1 or tokens_after > window_spans",
    "roles": "role == 'tool_result' or role == 'tool_call' and from_end_in_role >= 1",
    "names": "tool != 'edit' and tag not in ['agents_md'] or tool == 'browse'",
    "masked": "not masked and tokens >= 2",
    # Aggregates (SPEC §1e): the pair model's free counters with their facts, and whole-number arithmetic (§1d).
    "aggregates": "count_newer(role == 'user') >= 1 or tokens_older(not pinned) > 2 or "
                  "count(kind == 'record') >= 1 and tokens_of(role == 'tool_result') * 2 <= window_tokens or "
                  "position < window_spans // 2 or (from_end + tokens) % 3 == 1 or count_older(edited) % 2 == 1",
}
STAGE = {"none": "", "keep": "keep: tokens >= 4", "when": "when: window_tokens > 2",
         "until": "until: window_tokens <= 1", "counted": "when: count(role != 'user') >= 2\nkeep: tokens_newer(true) < 2",
         "fired": "when: event == 'overflow' or reported_tokens > 3"}
RANK, BUDGET = "rank: 0 - tokens", "budget: 4"


def columns() -> list:
    """The covering array's columns: every deployment key (DEPLOYMENT_CHOICES at run time, and each name key with
    its default and a mentioned name), then the policy's side."""
    out = [(key, tuple(values)) for key, values in DEPLOYMENT_CHOICES.items()]
    out += [(key, (default, "edit")) for key, default in DEPLOYMENT_NAMES.items()]
    return out + [
        ("effect", EFFECTS), ("placeholder_tokens", (1, 3)), ("summary_role", SUMMARY_ROLES),
        ("summary_at", SUMMARY_AT), ("pairs", PAIRS),
        ("order", ORDERS), ("rank", (False, True)), ("budget", (False, True)), ("start_on", (None, "user", "tool_result")),
        ("stage", tuple(STAGE)), ("vocabulary", tuple(VOCABULARY)),
    ]


def _requires(column, value, other, allowed):
    """A constraint: `column` other than `value` only where `other` is in `allowed`."""
    return lambda row: column not in row or other not in row or row[column] == value or row[other] in allowed


CONSTRAINTS = (
    _requires("placeholder_tokens", 1, "effect", SIZED),  # placeholder_tokens is only for mask, cut and summarise
    _requires("summary_role", "user", "effect", ("summarise",)),  # summary_role only for summarise
    _requires("summary_at", "replaced", "effect", ("summarise",)),  # summary_at too
    _requires("order", "oldest", "rank", (False,)),  # order with rank is an error
    # justification decides something only under evidence: on (nothing is cited otherwise): the other values there
    _requires("justification", "unchecked", "evidence", ("on",)),
)

# What a compaction does to the spans its stage takes (the effect, pairs) and what the deployment does to removed and
# cited spans: the pair model's terms split on these together (symbolic/conditions.py _pair_t1), so every triple of
# them is covered, not only every pair. A key that leaves DEPLOYMENT_CHOICES leaves the group.
REMOVAL = tuple(k for k in ("effect", "pairs", "evicted", "evidence", "justification")
                if k in DEPLOYMENT_CHOICES or k in ("effect", "pairs"))
EXTRA = ((REMOVAL, 3),)


def policy_of(row: dict):
    """The policy a row stands for, under the row's deployment."""
    deployment = Deployment(**{k: row[k] for k in (*DEPLOYMENT_CHOICES, *DEPLOYMENT_NAMES)})
    lines = [f"evict: {VOCABULARY[row['vocabulary']]}", RANK if row["rank"] else "", BUDGET if row["budget"] else "",
             STAGE[row["stage"]], f"effect: {row['effect']}", f"pairs: {row['pairs']}"]
    if row["order"] != "oldest":
        lines.append(f"order: {row['order']}")
    if row["effect"] in SIZED:
        lines.append(f"placeholder_tokens: {row['placeholder_tokens']}")
    if row["effect"] == "summarise":
        lines.append(f"summary_role: {row['summary_role']}")
        lines.append(f"summary_at: {row['summary_at']}")
    if row["start_on"] is not None:
        lines.append(f"start_on: {row['start_on']}")
    text = "\n".join(line for line in lines if line)
    return text, model_policy(text, deployment)


def targeted_runs(policy) -> list:
    """Runs that exercise a row: a tool-call pair taken by a compaction citing its call (evidence: on), a host budget
    that truncates a cited span; edits transform and destroy (citing under evidence), re-edits, pins, reads, undos of
    fresh, stale and truncated records; roles for start_on and summaries, compactions at several host budgets. Each
    is its enabled prefix: an action the runtime refuses here is left out."""
    cite = (lambda *ids: ids) if policy.deployment.evidence == "on" else (lambda *ids: ())
    runs = [
        (Append("message", 3, "tool_call", tool="browse"), Append("tool_output", 3, "tool_result", tool="browse"),
         Compact(cites=cite(0)), Append("message", 2, "assistant", tag="agents_md"),
         Append("message", 1, "tool_call", tool="edit"), Append("message", 2, "tool_result", tool="edit"),
         Compact(2, cites=cite(3)), Audit()),
        (Append("message", 2), Append("file_body", 1, "assistant"), Edit(0, "transform", cite(1)),
         Edit(0, "destroy"), Pin(1), Compact(), Undo(2), Read(0), Compact(1), Undo(4), Unpin(1)),
        (Append("message", 1, "system"), Append("message", 3, "user"), Append("message", 1, "assistant"),
         Append("message", 2, "tool_call"), Append("message", 1, "tool_result"), Edit(1, "destroy", cite(0)),
         Compact(), Compact(3), Undo(5), Audit()),
        # two edits, a compaction that may take the first's record, then undos past the gap (safe_undo's gate)
        (Append("message", 1), Append("message", 2), Edit(0, "transform", cite(1)), Edit(1, "transform"),
         Compact(1), Undo(4), Undo(2), Audit()),
    ]
    return [enabled_prefix(policy, run) for run in runs]




def random_walk(policy, seed: int, steps: int, max_spans: int = 6) -> tuple:
    """A run of `steps` enabled actions drawn with random.Random(seed): the action's name first, then one of its
    enabled instances (appends of every role, 1 to 3 tokens, names where the policy reads them; every citation and
    host-budget outcome; any host budget 1..8 besides)."""
    rng = random.Random(seed)
    names = RUN_NAMES if mentioned_names(policy) else ("",)
    state, actions = State(), []
    for _ in range(steps):
        anyhow = Compact(rng.randint(1, 8))
        options = enabled_actions(policy, state, max_spans, token_choices=(1, 2, 3), roles=ROLES, tools=names,
                                  tags=names) + ((anyhow,) if enabled(policy, state, anyhow, max_spans) else ())
        name = rng.choice(sorted({a.name for a in options}))
        action = rng.choice([a for a in options if a.name == name])
        actions.append(action)
        state = step(policy, state, action, max_spans).after
    return tuple(actions)


def check_row(index: int, row: dict, walks: int, steps: int) -> dict:
    """Project every run of the row onto the pair model of the policy's own terms and the free-policy model, each
    violation of a condition that applies to the policy onto that model's violation term; return counts (runs, pairs
    projected). A failure names the row, the policy, the run and the condition."""
    text, policy = policy_of(row)
    runs = [("targeted", k, run) for k, run in enumerate(targeted_runs(policy))]
    runs += [("random", seed, random_walk(policy, seed, steps)) for seed in range(1000 * index, 1000 * index + walks)]
    counts = {"runs": 0, "pairs": 0}
    failures = []
    encodings = {free_policy: PairEncoding(policy, free_policy) for free_policy in (False, True)}
    for kind, key, actions in runs:
        counts["runs"] += 1
        for free_policy in (False, True):
            projected = ProjectedRun(policy, actions, free_policy, encodings[free_policy], applicable(policy))
            counts["pairs"] += projected.width
            model = "free-policy model" if free_policy else "pair model"
            failures += [f"  {model}, {kind} run {key}, pair ({r}, {r + 1}): {why}\n    run: {actions}"
                         for r, why in projected.failures(batched=True)]
    settings = ", ".join(f"{k}={v!r}" for k, v in row.items())
    assert not failures, (f"row {index} ({settings})\npolicy:\n  " + text.replace("\n", "\n  ")
                          + "\n" + "\n".join(failures))
    return counts


ROWS = covering_array(columns(), CONSTRAINTS, strength=2, seed=27, extra=EXTRA)


def test_the_rows_cover_every_pair_of_settings_that_can_go_together():
    cols = columns()
    assert [name for name, _ in cols[:len(DEPLOYMENT_CHOICES)]] == list(DEPLOYMENT_CHOICES)
    assert not missing_targets(cols, CONSTRAINTS, ROWS, 2, EXTRA)
    # every row is a policy the parser accepts, and reads the family its vocabulary names
    for row in ROWS:
        text, policy = policy_of(row)
        assert policy.effect == row["effect"] and policy.deployment.evidence == row["evidence"], text
    assert {name for row in ROWS for name in read_attributes(policy_of(row)[1])} >= {
        "tokens", "age", "idle", "reads", "recency", "frequency", "pinned", "edited", "kind", "namespace", "role",
        "tool", "tag", "position", "from_end", "from_end_in_role", "turn", "tokens_after", "masked", "window_tokens",
        "step", "window_spans", "event", "reported_tokens"}


def test_the_targeted_runs_do_what_they_are_for():
    # On the row of issue 27's false proof (mask, pairs together, a cited call downgraded), the first run splits the
    # pair: the runtime violates T1 there.
    row = dict(ROWS[0], effect="mask", placeholder_tokens=3, pairs="together", evidence="on",
               justification="downgrade", vocabulary="constant", stage="none", rank=False, budget=False,
               order="oldest", start_on=None, summary_role="user", refusal="silent")
    _text, policy = policy_of(row)
    state, bad = State(), set()
    for action in targeted_runs(policy)[0]:
        t = step(policy, state, action)
        bad |= violations(policy, t)
        state = t.after
    assert "T1" in bad
    assert all(len(run) >= 7 for row in ROWS[:5] for run in targeted_runs(policy_of(row)[1]))


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_every_row_projects_onto_both_pair_models(index):
    counts = check_row(index, ROWS[index], walks=1, steps=6)
    assert counts["runs"] == len(targeted_runs(policy_of(ROWS[index])[1])) + 1 and counts["pairs"] > 0


# The slow tier: every triple of settings, with more and longer random walks per row, in chunks for pytest-xdist.
SLOW_CHUNKS = 6
WALKS_3WISE = 2  # random walks per row, with the targeted runs (3 until 2026-12-05, when CI had no room left)


# Issue 29's constructs are in the 2-wise array above and in every pair of them (tests/test_vocabulary2.py), but not yet
# in the 3-wise one: they would add 61 rows (20%) to CI's longest test while CI is near its 30 minutes.
LATER_3WISE = {"vocabulary": ("aggregates",), "stage": ("counted", "fired"), "summary_at": ("end",)}


def columns_3wise() -> list:
    return [(name, tuple(v for v in values if v not in LATER_3WISE.get(name, ()))) for name, values in columns()]


@lru_cache(maxsize=1)
def _rows_3wise() -> tuple:
    rows = covering_array(columns_3wise(), CONSTRAINTS, strength=3, seed=27)
    assert not missing_targets(columns_3wise(), CONSTRAINTS, rows, 3)
    return tuple(rows)


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("chunk", range(SLOW_CHUNKS))
def test_every_row_of_a_3_wise_array_projects_onto_both_pair_models(chunk):
    rows = [(k, row) for k, row in enumerate(_rows_3wise()) if k % SLOW_CHUNKS == chunk]
    runs, failures, expected = 0, [], 0
    for index, row in rows:
        expected += len(targeted_runs(policy_of(row)[1])) + WALKS_3WISE
        try:
            runs += check_row(index, row, walks=WALKS_3WISE, steps=10)["runs"]
        except AssertionError as exc:  # every failing row of the chunk is reported, not only the first
            failures.append(str(exc))
    print(f"3-wise chunk {chunk}: {len(rows)} rows of {len(_rows_3wise())}, {runs} runs, {len(failures)} rows failing")
    assert not failures, "\n\n".join(failures)
    assert runs == expected
