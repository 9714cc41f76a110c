"""Rule 2's states and moves (hypersched_nb/core/policies/_trust_states.py): the table, each
legal move made through ``Trust`` as the policy makes it, and what the policy line says."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from hypersched_nb.core.policies._prior import PriorEvidence
from hypersched_nb.core.policies._rungs import Rung
from hypersched_nb.core.policies._trust import Trust
from hypersched_nb.core.policies._trust_states import TRANSITIONS, TrustState, initial, move
from hypersched_nb.errors import ConfigError, InvalidTransition

S = TrustState

#: The specification: every legal move, as "STATE --move--> NEW".
LEGAL = """
ONLY --trust--> ONLY
ONLY --doubt--> ONLY
TOLD --trust--> TOLD
TOLD --doubt--> DOUBT
UNDOUBTED --trust--> TOLD
UNDOUBTED --doubt--> DOUBT
TENTATIVE --arrive--> TENTATIVE
TENTATIVE --arrive_late--> LATE
TENTATIVE --pass--> EARNED
TENTATIVE --fail--> WITHDRAWN
TENTATIVE --trust--> TOLD
TENTATIVE --doubt--> DOUBT
TENTATIVE --prior_trust--> PRIOR
TENTATIVE --prior_doubt--> DOUBT
PRIOR --pass--> EARNED
PRIOR --fail--> WITHDRAWN
PRIOR --trust--> TOLD
PRIOR --doubt--> DOUBT
LATE --arrive--> TENTATIVE
LATE --arrive_late--> LATE
LATE --pass--> EARNED
LATE --fail--> WITHDRAWN
LATE --trust--> TOLD
LATE --doubt--> DOUBT
DOUBT --pass--> EARNED
DOUBT --fail--> DOUBT
DOUBT --trust--> TOLD
DOUBT --doubt--> DOUBT
WITHDRAWN --pass--> EARNED_AFTER_WITHDRAWAL
WITHDRAWN --fail--> WITHDRAWN
WITHDRAWN --trust--> TOLD_AFTER_WITHDRAWAL
WITHDRAWN --doubt--> WITHDRAWN
EARNED --trust--> TOLD
EARNED --doubt--> DOUBT
EARNED_AFTER_WITHDRAWAL --trust--> TOLD_AFTER_WITHDRAWAL
EARNED_AFTER_WITHDRAWAL --doubt--> WITHDRAWN
TOLD_AFTER_WITHDRAWAL --trust--> TOLD_AFTER_WITHDRAWAL
TOLD_AFTER_WITHDRAWAL --doubt--> WITHDRAWN
"""


def legal_moves() -> list[tuple[TrustState, str, TrustState]]:
    out = []
    for line in LEGAL.split("\n"):
        if line:
            state, rest = line.split(" --")
            name, new = rest.split("--> ")
            out.append((S[state], name, S[new]))
    return out


MOVES = sorted({name for row in TRANSITIONS.values() for name in row})
_tid = itertools.count(1000)


#: a past search whose epoch 1 held at epoch 4 and at the end
TRUSTING = PriorEvidence(
    label="search 'runs/a'", low=1, high=4, auc=0.95, kept=25, paused=75, survivor_auc=0.95,
    survivor_kept=5, survivor_paused=15, final=16, final_auc=0.9, final_kept=25, final_paused=75,
)  # fmt: skip
#: a past search whose epoch 1 held at epoch 4, but whose order was reversed by the end
REVERSING = dataclasses.replace(TRUSTING, label="search 'runs/b'", final_auc=0.2)


def make(early_signal="auto", *, probation=1, milestones=(1, 4, 16), prior=None):
    rungs = [Rung(m, 4) for m in milestones]
    trust = Trust(
        rungs, probation=probation, pairs=8, z=1.645, floor=0.5, eta=4, early_signal=early_signal,
        prior=prior,
    )  # fmt: skip
    return trust, rungs


def feed(trust, rungs, pairs):
    """Trials that reached epoch 1 with ``low`` and then epoch 4 with ``high``."""
    low, high = rungs[:2]
    for a, b in pairs:
        tid = next(_tid)
        low.record(tid, a)
        high.record(tid, b)
        trust.pair(low, high, 0)


# Eight pairs each: the first test (at 8) passes on AGREE and fails on REVERSED; after
# REVERSED, the second test (at 16) passes on RECOVER and fails on WORSE.
AGREE = [(i / 100, 0.5 + i / 100) for i in range(8)]
REVERSED = [(i / 100, 0.57 - i / 100) for i in range(8)]
RECOVER = [(0.5 + i / 100, 0.9 + i / 100) for i in range(8)]
WORSE = [(0.1 + i / 100, 0.47 - i / 100) for i in range(8)]


def arrive(trust, rungs, *, testable):
    tid = next(_tid)
    rungs[0].record(tid, 0.0)
    return trust.tentative(rungs[0], tid, 0.0, 0.5, testable=testable)


def reach(state: TrustState):
    """A ``Trust`` brought to ``state`` by the calls the policy makes."""
    starts = {
        S.ONLY: {"milestones": (1,)},
        S.TOLD: {"early_signal": "trust", "probation": 0},
        S.UNDOUBTED: {"probation": 0},
        S.DOUBT: {"early_signal": "doubt"},
        S.PRIOR: {"prior": TRUSTING},
    }
    trust, rungs = make(**starts.get(state, {}))
    if state is S.LATE:
        arrive(trust, rungs, testable=False)
    if state is S.EARNED:
        feed(trust, rungs, AGREE)
    if state in (S.WITHDRAWN, S.EARNED_AFTER_WITHDRAWAL, S.TOLD_AFTER_WITHDRAWAL):
        feed(trust, rungs, REVERSED)
    if state is S.EARNED_AFTER_WITHDRAWAL:
        feed(trust, rungs, RECOVER)
    if state is S.TOLD_AFTER_WITHDRAWAL:
        trust.tell("trust")
    assert trust.current is state
    return trust, rungs


def perform(trust, rungs, name):
    """Make move ``name`` as the policy would."""
    if name.startswith("prior_"):  # the policy made with a past search's word, on the same rungs
        prior = TRUSTING if name == "prior_trust" else REVERSING
        trust.__init__(rungs, probation=1, pairs=8, z=1.645, floor=0.5, eta=4, prior=prior)
    elif name in ("arrive", "arrive_late"):
        arrive(trust, rungs, testable=name == "arrive")
    elif name in ("trust", "doubt"):
        trust.tell(name)
    elif trust.seen[0] == 0:
        feed(trust, rungs, AGREE if name == "pass" else REVERSED)
    else:
        feed(trust, rungs, RECOVER if name == "pass" else WORSE)


def test_the_table_is_the_specification():
    table = [(state, name, new) for state, row in TRANSITIONS.items() for name, new in row.items()]
    assert sorted(table, key=str) == sorted(legal_moves(), key=str)  # no more, no fewer
    assert set(TRANSITIONS) == set(TrustState)  # every state has its row


@pytest.mark.parametrize("state, name, new", legal_moves(), ids=lambda v: getattr(v, "name", v))
def test_each_legal_move_is_made_by_the_policys_own_calls(state, name, new):
    trust, rungs = reach(state)
    perform(trust, rungs, name)
    assert trust.current is new
    assert trust.trusted[0] is new.judges  # the lowest rung judges as its state says
    assert trust.tentative_on() is new.tentative
    assert trust.mode() == ("trust" if new.judges else "doubt")


@pytest.mark.parametrize(
    "state, name",
    [(s, m) for s in TrustState for m in MOVES if m not in TRANSITIONS[s]],
    ids=lambda v: getattr(v, "name", v),
)
def test_every_other_move_is_illegal_and_names_the_state(state, name):
    with pytest.raises(InvalidTransition, match=f"^rule 2: can't {name} when state={state.name}$"):
        move(state, name)


def test_an_illegal_move_reads_as_one_line():
    with pytest.raises(InvalidTransition) as err:
        move(S.EARNED, "fail")  # an earned rung is never tested again
    assert str(err.value) == "rule 2: can't fail when state=EARNED"


@pytest.mark.parametrize(
    "rungs, early_signal, probation, state",
    [
        (1, "auto", 1, S.ONLY),  # the top rung is never on probation
        (3, "trust", 0, S.TOLD),
        (3, "auto", 0, S.UNDOUBTED),
        (3, "doubt", 0, S.UNDOUBTED),
        (3, "auto", 1, S.TENTATIVE),
        (3, "doubt", 2, S.DOUBT),
    ],
)
def test_a_search_starts_where_its_settings_say(rungs, early_signal, probation, state):
    assert initial(rungs=rungs, early_signal=early_signal, probation=probation) is state


def test_an_even_test_moves_nothing():
    trust, rungs = make()
    feed(trust, rungs, [(0.5, 0.5)] * 8)  # all tie at epoch 1: none paused to compare
    assert trust.current is S.TENTATIVE and trust.agreement[0] == (0.5, 8)


def test_only_a_failed_tentative_test_owes_the_paused_a_return():
    withdrawn, rungs = reach(S.WITHDRAWN)
    tid = min(rungs[0].recorded)
    withdrawn.hold(tid)  # a trial the tentative verdicts paused
    assert withdrawn.owed(rungs[0], {tid}) == tid
    withdrawn.tell("trust")
    assert withdrawn.owed(rungs[0], {tid}) is None  # told to trust: nobody is owed
    withdrawn.tell("doubt")
    assert withdrawn.current is S.WITHDRAWN  # the failed test is remembered
    assert withdrawn.owed(rungs[0], {tid}) == tid
    doubt, rungs = reach(S.DOUBT)
    feed(doubt, rungs, REVERSED)
    tid = min(rungs[0].recorded)
    doubt.hold(tid)
    assert doubt.current is S.DOUBT and doubt.owed(rungs[0], {tid}) is None  # none tentative


def test_told_auto_keeps_things_as_they_stand():
    for state in TrustState:
        trust, _ = reach(state)
        assert trust.tell("auto") is False and trust.current is state


def test_the_policy_line_is_read_from_the_state():
    told = (
        "trust: epoch 1 judges from the start (early_signal='trust')",
        "trusting epoch 1, as told",
    )
    pending = "(0 of 8 pairs)"
    lines = {
        S.ONLY: ("trust: epoch 1 is the only epoch judged", "trusting epoch 1"),
        S.TOLD: told,
        S.UNDOUBTED: (
            "trust: epoch 1 judges from the start (no epoch on probation)",
            "trusting epoch 1",
        ),
        S.TENTATIVE: (
            "doubt: epoch 1 judges tentatively, 1 trial in 4 untested, until its verdicts hold "
            f"at epoch 4 {pending}",
            "trusting epoch 1 for now, testing it at epoch 4",
        ),
        S.LATE: (
            "doubt: epoch 1 judges tentatively, too near the deadline to test it against "
            f"epoch 4 {pending}",
            "trusting epoch 1, too late to test it at epoch 4",
        ),
        S.DOUBT: (
            f"doubt: epoch 1 not yet shown to predict epoch 4 {pending}",
            "doubting epoch 1 until it predicts epoch 4",
        ),
        S.WITHDRAWN: (
            "doubt: epoch 1 not yet shown to predict epoch 4 (AUC 0.00 < 0.91 over 8 pairs); "
            "tentative verdicts withdrawn",
            "doubting epoch 1: 0% agreement with epoch 4, 91% needed",
        ),
        S.EARNED: (
            "trust: epoch 1's verdicts held at epoch 4 (AUC 1.00 > 0.91 over 8 pairs)",
            "trusting epoch 1: 100% agreement with epoch 4",
        ),
        S.EARNED_AFTER_WITHDRAWAL: (
            "trust: epoch 1's verdicts held at epoch 4 (AUC 1.00 > 0.78 over 16 pairs); "
            "tentative verdicts withdrawn",
            "trusting epoch 1: 100% agreement with epoch 4",
        ),
        S.TOLD_AFTER_WITHDRAWAL: told,
        S.PRIOR: (
            "trust: epoch 1 judges from the start, as the past search showed, until this "
            f"search's own pairs disagree {pending}",
            "from search 'runs/a': epoch 1 agreed with epoch 4 in 95% of pairs, with epoch 16 "
            "in 90%; trusting epoch 1, testing it at epoch 4",
        ),
    }
    assert set(lines) == set(TrustState)
    for state, (line, short) in lines.items():
        trust, _ = reach(state)
        assert (trust.state(), trust.short()) == (line, short), state


def test_told_trust_needs_no_rung_on_probation_and_a_word_it_knows():
    with pytest.raises(ConfigError, match="`probation` is 1, but must be 0 with early_signal="):
        make("trust", probation=1)
    trust, _ = make()
    with pytest.raises(ConfigError, match="`early_signal` is 'sure', but must be one of"):
        trust.tell("sure")
    assert trust.current is S.TENTATIVE and trust.early_signal == "auto"  # nothing changed


def test_higher_rungs_on_probation_keep_their_own_verdict():
    trust, rungs = make("doubt", probation=2, milestones=(1, 4, 16, 64))
    assert trust.trusted == [False, False, True, True] and trust.first() == 2
    for tid in range(8):  # eight trials reach epoch 16 after epoch 4, in the same order
        rungs[1].record(tid, tid / 10)
        rungs[2].record(tid, 1 + tid / 10)
        trust.pair(rungs[1], rungs[2], 1)
    assert trust.trusted == [False, True, True, True] and trust.current is S.DOUBT
    assert trust.tell("doubt") is True  # back on probation, both
    assert trust.trusted == [False, False, True, True]


def test_a_prior_that_trusts_epoch_1_makes_it_judge_from_the_start_and_says_so():
    trust, rungs = make(prior=TRUSTING)
    assert trust.current is S.PRIOR and trust.trusted[0]  # epoch 1 judges from the start
    assert trust.first() == 1  # for now: rules 3 and 4 read epoch 4 until the search's own test
    assert trust.short() == (
        "from search 'runs/a': epoch 1 agreed with epoch 4 in 95% of pairs, with epoch 16 in "
        "90%; trusting epoch 1, testing it at epoch 4"
    )


def test_the_searchs_own_test_passing_makes_the_priors_verdicts_final():
    trust, rungs = make(prior=TRUSTING)
    feed(trust, rungs, AGREE[:-1])  # seven pairs: no test yet
    assert trust.current is S.PRIOR and trust.first() == 1
    (a, b), (low, high) = AGREE[-1], rungs[:2]
    low.record(1, a)
    high.record(1, b)
    assert trust.pair(low, high, 0) is True  # the eighth: the test passes, first() moved
    assert trust.current is S.EARNED and trust.first() == 0


def test_this_searchs_own_evidence_wins_over_the_prior_and_brings_the_paused_back():
    trust, rungs = make(prior=TRUSTING)
    rungs[0].record(1, 0.1)  # paused at epoch 1 on the prior's word
    assert trust.holds(0)
    trust.hold(1)
    feed(trust, rungs, REVERSED)  # its own pairs order epoch 4 backwards
    assert trust.current is S.WITHDRAWN and trust.first() == 1
    assert trust.owed(rungs[0], {1: None}) == 1


def test_a_prior_neither_held_nor_reversed_at_the_end_leaves_the_search_as_without_one():
    late = dataclasses.replace(TRUSTING, final_auc=0.45)  # within noise of chance at the end
    trust, _ = make(prior=late)
    assert trust.current is S.TENTATIVE
    assert trust.short().endswith("; trusting epoch 1 for now, testing it at epoch 4")


def test_a_prior_is_trusted_by_the_end_of_its_curves_not_by_epoch_4_on_the_way():
    noisy_midway = dataclasses.replace(TRUSTING, auc=0.55)  # epoch 4 half shuffled, the end not
    trust, _ = make(prior=noisy_midway)
    assert trust.current is S.PRIOR and trust.trusted[0]


def test_a_prior_whose_order_was_reversed_by_the_end_starts_the_search_in_doubt():
    trust, rungs = make(prior=REVERSING)
    assert trust.current is S.DOUBT and trust.first() == 1  # no verdict at epoch 1, even for now
    assert trust.short() == (
        "from search 'runs/b': epoch 1 agreed with epoch 4 in 95% of pairs, with epoch 16 in "
        "20%, its order reversed by then; doubting epoch 1 until it predicts epoch 4"
    )
    rungs[0].record(1, 0.0)
    assert trust.tentative(rungs[0], 1, 0.0, 0.5) is None
    feed(trust, rungs, AGREE)  # this search's own pairs agree: its evidence wins
    assert trust.current is S.EARNED and trust.first() == 0


def test_a_small_prior_reversed_within_its_noise_is_too_few_to_tell():
    small = dataclasses.replace(REVERSING, kept=2, paused=6, final_kept=2, final_paused=6)
    trust, _ = make(prior=small)
    assert trust.current is S.TENTATIVE
    assert (
        ", its order reversed by then" not in trust.short() and "too few to tell" in trust.short()
    )


def test_the_users_word_overrides_the_prior():
    trust, _ = make("doubt", prior=TRUSTING)
    assert trust.current is S.DOUBT
    assert trust.short() == "doubting epoch 1 until it predicts epoch 4"
    trust, _ = make("trust", probation=0, prior=REVERSING)
    assert trust.current is S.TOLD and trust.short() == "trusting epoch 1, as told"


def test_a_prior_of_other_rungs_is_not_read():
    trust, _ = make(prior=dataclasses.replace(TRUSTING, high=3))
    assert trust.prior is None and trust.current is S.TENTATIVE
