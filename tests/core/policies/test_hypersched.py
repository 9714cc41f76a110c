"""HyperSched, the project's default: its five documented rules (module docstring of
hypersched_nb/core/policies/_hypersched.py), each where it differs from the paper's."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._hypersched import HyperSched, HyperSchedParams
from hypersched_nb.core.policies._hypersched_paper import HyperSchedPaper
from hypersched_nb.core.policies._trust import keep_agreement, trusted
from hypersched_nb.core.scaling import LINEAR, ScalingCurve
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import Trace

CONTINUE, PAUSE, STOP = Decision.CONTINUE, Decision.PAUSE, Decision.STOP
OPEN = PolicyContext.for_test(workers=8)  # no deadline: admission stays open


def trial(tid, state=TrialState.RUNNING, *, workers=1, best=-math.inf, since=0, epochs=0):
    t = Trial(tid, {})
    t.state, t.workers, t.best_score, t.results_since_start, t.epochs = (
        state, workers, best, since, epochs,
    )  # fmt: skip
    return t


def report(policy, t, epoch, metric, ctx=OPEN, seconds=1.0, workers=1):
    t.epochs = epoch
    t.best_score = max(t.best_score, metric)
    return policy.on_trial_result(t, Result(t.trial_id, epoch, metric, 0.0, seconds, workers), ctx)


def policy(**kw):
    return HyperSched(**{"max_epochs": 52, "min_epochs": 1, "eta": 4, **kw})


# ------------------------------------------------------------------ rule 1: judge once, pause


def test_a_trusted_rung_judges_a_trial_once_and_never_again():
    hs, paper = policy(), HyperSchedPaper(max_epochs=52, min_epochs=1, eta=4)
    for p in (hs, paper):
        for tid, value in enumerate([0.3, 0.4, 0.5], start=10):
            report(p, trial(tid), 4, value)  # three peers: a full judgement, not a provisional one
        first = trial(0)
        assert report(p, first, 4, 0.6).decision is CONTINUE
        for tid in range(1, 6):
            report(p, trial(tid), 4, 0.9)  # better peers arrive afterwards
        p.last = report(p, first, 5, 0.55).decision
    assert hs.last is CONTINUE  # its rung-4 value is not judged again
    assert paper.last is PAUSE  # the paper re-checks and pauses it late


def test_a_pass_with_few_peers_is_checked_once_more():
    hs = policy()
    early = trial(0)
    assert report(hs, early, 4, 0.6).decision is CONTINUE  # alone at rung 4: a provisional pass
    for tid, value in enumerate([0.7, 0.8, 0.9, 0.95], start=1):
        report(hs, trial(tid), 4, value)  # now five values: 0.6 is below their 75th percentile
    verdict = report(hs, early, 5, 0.65)
    assert verdict.decision is PAUSE and "rung 4" in verdict.reason  # confirmed once: it fails
    assert report(hs, early, 6, 0.66).decision is CONTINUE  # resumed later, never checked again


def test_below_the_cutoff_of_the_peers_recorded_before_it_pauses():
    hs = policy()
    report(hs, trial(0), 4, 0.6)
    verdict = report(hs, trial(1), 4, 0.5)
    assert verdict.decision is PAUSE  # one peer suffices, as in ASHA
    assert "rung 4" in verdict.reason and "below cutoff" in verdict.reason
    assert report(hs, trial(2), 4, 0.7).decision is CONTINUE
    stopper = policy(pause=False)
    report(stopper, trial(0), 4, 0.6)
    assert report(stopper, trial(1), 4, 0.5).decision is STOP


def test_paused_trials_are_promoted_only_when_asked():
    for promote in (False, True):
        hs = policy(promote=promote)
        report(hs, trial(0), 4, 0.9)
        late = trial(1)
        assert report(hs, late, 4, 0.5).decision is PAUSE
        late.state = TrialState.PAUSED
        pending = trial(7, TrialState.PENDING)
        ctx = PolicyContext.for_test(workers=8, trials={1: late, 7: pending})
        assert hs.choose_trial_to_run(ctx) is pending  # 0.5 is below the top quarter
        for tid, value in enumerate([0.1, 0.2, 0.3], start=2):
            report(hs, trial(tid), 4, value)  # 0.5 is now the 75th percentile of five values
        chosen = hs.choose_trial_to_run(ctx)
        assert chosen is (late if promote else pending)  # new configurations first by default
        assert hs.choose_trial_to_run(ctx) is chosen  # asking twice changes nothing


# ------------------------------------------------------------------ rule 2: probation


def test_told_to_doubt_the_lowest_rung_judges_no_one_while_on_probation():
    hs = policy(early_signal="doubt")
    assert hs.trust.trusted == [False, True, True]  # rungs 1, 4, 16
    values = [0.9, 0.1, 0.05, 0.01]
    assert all(report(hs, trial(t), 1, v).decision is CONTINUE for t, v in enumerate(values))


def test_auto_judges_epoch_1_at_once_for_now_but_leaves_one_trial_in_eta_untested():
    hs = policy()  # "auto": tentative verdicts while epoch 1 is on probation
    assert hs.trust.trusted == [False, True, True]  # still on probation: the test decides
    decisions = [report(hs, trial(t), 1, v).decision for t, v in enumerate([0.5, 0.1, 0.9, 0.05])]
    assert decisions == [CONTINUE, PAUSE, CONTINUE, CONTINUE]  # 0.9 is above; the 4th untested
    verdict = report(hs, trial(4), 1, 0.2)
    assert verdict.decision is PAUSE  # below the cutoff of the values before it, as in ASHA
    assert verdict.reason == (
        "rung 1: 0.2 below cutoff 0.6, for now (epoch 1 not yet tested against epoch 4)"
    )
    assert hs.describe(OPEN).startswith("trusting epoch 1 for now, testing it at epoch 4 · ")
    assert hs.early_signal_state() == (
        "doubt: epoch 1 judges tentatively, 1 trial in 4 untested, until its verdicts hold at "
        "epoch 4 (0 of 8 pairs)"
    )
    assert policy(audit=2).trust.audit == 2 and policy(eta=3).trust.audit == 3


def test_no_trial_goes_untested_once_the_deadline_leaves_the_test_no_time_to_act():
    flat = ScalingCurve({2: 1.05})  # admission stays open: the verdicts alone decide

    def fourth(time_left):  # the one in 4 left untested while the test could still act
        hs = policy()
        ctx = at(time_left, scaling=flat)
        values = [0.5, 0.1, 0.9, 0.05]
        return hs, [report(hs, trial(t), 1, v, ctx, seconds=10.0) for t, v in enumerate(values)][3]

    # 60 s: 3 epochs of 10 s to epoch 4, then 3 more for a trial a failed test brings back
    assert fourth(60.0)[1].decision is CONTINUE
    hs, verdict = fourth(59.0)
    assert verdict.decision is PAUSE and "for now" in verdict.reason
    assert hs.describe(at(59.0, scaling=flat)).startswith(
        "trusting epoch 1, too late to test it at epoch 4 · "
    )
    assert hs.early_signal_state() == (
        "doubt: epoch 1 judges tentatively, too near the deadline to test it against epoch 4 "
        "(0 of 8 pairs)"
    )


def test_the_test_is_expected_at_the_pace_of_its_pairs_so_far():
    hs = policy()
    low, high = hs.rungs[:2]
    assert hs.trust.next_test_in(0.0) is None  # no pair yet: no pace
    hs.trust.pair(low, high, 0, now=10.0)
    assert hs.trust.next_test_in(10.0) is None  # one pair: still no pace
    for now in (20.0, 30.0):  # a pair every 10 s
        hs.trust.pair(low, high, 0, now=now)
    assert hs.trust.next_test_in(30.0) == 50.0  # 5 more to the test at 8 pairs


def reach_epoch_4(hs, values_at_1, values_at_4):
    """Trials 100, 101 … report epoch 1, and those not paused there epoch 4: test pairs."""
    verdicts = {}
    for tid, (a, b) in enumerate(zip(values_at_1, values_at_4, strict=True), start=100):
        t = trial(tid)
        verdicts[tid] = report(hs, t, 1, a).decision
        if verdicts[tid] is CONTINUE:
            report(hs, t, 4, b)
    return verdicts


def test_a_failed_test_ends_the_tentative_verdicts_and_the_paused_come_back_first():
    hs = policy()
    firsts = [0.5, 0.4, 0.3, 0.2] * 6  # 0.4 and 0.3 paused for now; each 0.2 (4th) untested
    verdicts = reach_epoch_4(hs, firsts, [1 - v for v in firsts])  # epoch 4 says the reverse
    held = sorted(tid for tid, d in verdicts.items() if d is PAUSE)
    assert hs.trust.agreement[0][0] < 0.5 and not hs.trust.trusted[0]  # the test failed …
    assert hs.early_signal_state().endswith("; tentative verdicts withdrawn")
    assert report(hs, trial(7), 1, 0.01).decision is CONTINUE  # … and judges no one now
    paused = {tid: trial(tid, TrialState.PAUSED) for tid in held}
    pending = trial(99, TrialState.PENDING)
    ctx = PolicyContext.for_test(workers=8, trials={**paused, 99: pending})
    chosen = hs.choose_trial_to_run(ctx)
    assert chosen.trial_id in held and chosen is not pending  # owed before anything new
    assert hs.rungs[0].recorded[chosen.trial_id] == 0.3  # backwards order: the lowest first
    assert hs.choose_trial_to_run(ctx) is chosen  # asking twice changes nothing
    report(hs, chosen, 2, 0.9)  # it runs again: the next one is owed
    rest = {tid: t for tid, t in paused.items() if tid != chosen.trial_id}
    ctx = PolicyContext.for_test(workers=8, trials={**rest, 99: pending})
    assert hs.choose_trial_to_run(ctx).trial_id in rest


def test_a_passed_test_makes_the_tentative_verdicts_final():
    hs = policy()
    firsts = [0.5, 0.4, 0.3, 0.2] * 6
    verdicts = reach_epoch_4(hs, firsts, firsts)  # epoch 4 agrees
    assert hs.trust.trusted[0] and hs.trust.mode() == "trust"
    held = {tid: trial(tid, TrialState.PAUSED) for tid, d in verdicts.items() if d is PAUSE}
    pending = trial(99, TrialState.PENDING)
    ctx = PolicyContext.for_test(workers=8, trials={**held, 99: pending})
    assert hs.choose_trial_to_run(ctx) is pending  # nobody is owed: new configurations first


def test_the_lowest_rung_is_trusted_once_its_verdicts_hold_at_the_next():
    hs = policy()
    for tid in range(8):
        t = trial(tid)
        report(hs, t, 1, tid / 100)
        report(hs, t, 4, 0.5 + tid / 100)  # the same order at rung 4
    assert hs.trust.trusted[0] is True  # 8 pairs, the two kept beat the six others: AUC 1
    assert hs.trust.agreement[0] == (1.0, 8)
    assert report(hs, trial(99), 1, 0.0).decision is PAUSE  # rung 1 now judges
    assert hs.describe(OPEN).startswith(
        "trusting epoch 1: 100% agreement with epoch 4 · keeping the top 3 of 9 after epoch 1 ·"
    )
    assert hs.early_signal_state() == (
        "trust: epoch 1's verdicts held at epoch 4 (AUC 1.00 > 0.91 over 8 pairs)"
    )


def test_in_doubt_a_trial_that_gains_nothing_on_its_second_epoch_pauses_there():
    hs = policy(early_signal="doubt")
    stalled, learning = trial(0), trial(1)
    for t, first in ((stalled, 0.30), (learning, 0.10)):
        assert report(hs, t, 1, first).decision is CONTINUE  # epoch 1 judges no one in doubt
    verdict = report(hs, stalled, 2, 0.30)  # no better than its epoch 1: not learning
    assert verdict.decision is PAUSE
    assert verdict.reason == (
        "stalled: epoch 2 (0.3) no better than epoch 1 (0.3) while epoch 1 is in doubt"
    )
    assert report(hs, learning, 2, 0.11).decision is CONTINUE  # any gain carries on to the test
    assert report(hs, learning, 3, 0.11).decision is CONTINUE  # only the epoch after rung 1
    assert hs.choose_trial_to_run(OPEN) is None  # paused, it waits as rung 1's others do


def test_a_stall_is_measured_in_the_metrics_direction():
    hs = policy()
    t = trial(0)
    ctx = PolicyContext.for_test(workers=8, mode="min")
    report(hs, t, 1, 0.5, ctx)  # a loss
    verdict = report(hs, t, 2, 0.6, ctx)  # that rose: no gain
    assert verdict.decision is PAUSE
    assert verdict.reason.startswith("stalled: epoch 2 (0.6) no better than epoch 1 (0.5)")
    u = trial(1)
    report(hs, u, 1, 0.5, ctx)
    assert report(hs, u, 2, 0.4, ctx).decision is CONTINUE  # a loss that fell is a gain


@pytest.mark.parametrize("settings", [{"early_signal": "trust"}, {"pause_stalled": False}])
def test_no_stall_pause_when_epoch_1_is_trusted_or_when_told_not_to(settings):
    hs = policy(**settings)
    report(hs, trial(1), 1, 0.9)  # a peer, so that a trusted epoch 1 keeps trial 0
    t = trial(0)
    report(hs, t, 1, 0.95)
    assert report(hs, t, 2, 0.95).decision is CONTINUE


def test_an_inverted_lowest_rung_stays_on_probation():
    hs = policy()
    for tid in range(32):
        t = trial(tid)
        report(hs, t, 1, tid / 100)
        report(hs, t, 4, 1 - tid / 100)  # epoch-1 order is the reverse of epoch 4's
    assert hs.trust.trusted[0] is False
    assert hs.trust.agreement[0] == (0.0, 32)  # tested at 8, 16 and 32 pairs
    assert report(hs, trial(99), 1, 0.0).decision is CONTINUE
    assert " after epoch 4 ·" in hs.describe(OPEN)  # the user sees where it judges


@pytest.mark.parametrize(
    "auc, kept, paused, expected",
    [
        (1.0, 2, 6, True),  # 1 − 1.645 x 0.25 = 0.59 > 0.5
        (0.75, 2, 6, False),  # 0.34: eight pairs cannot tell this from chance
        (0.75, 8, 24, True),  # 0.75 − 0.20 = 0.55
        (0.55, 64, 192, False),  # 0.55 − 0.07 = 0.48
        (1.0, 0, 8, False),  # nobody kept: no verdict to test
    ],
)
def test_trust_needs_the_auc_above_chance_by_z_standard_errors(auc, kept, paused, expected):
    assert trusted(auc, kept, paused, 1.645, 0.5) is expected


def test_keep_agreement_is_the_chance_a_kept_trial_beats_a_paused_one_later():
    assert keep_agreement([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8], 4) == (1.0, 2, 6)
    assert keep_agreement([1, 2, 3, 4, 5, 6, 7, 8], [8, 7, 6, 5, 4, 3, 2, 1], 4)[0] == 0.0
    auc, _, _ = keep_agreement([1, 2, 3, 4], [5, 5, 5, 5], 2)
    assert auc == 0.5  # ties count half


# ------------------------------------------------------------------ rule 3: breadth or depth


def rung4_with_followers(gain):
    """Eight trials at rung 4 (values 0.1 … 0.8), the two best then trained to epoch 8,
    improving by ``gain`` each."""
    hs = policy()
    ts = [trial(t) for t in range(8)]
    for t in ts:
        report(hs, t, 4, 0.1 * (t.trial_id + 1))
    for t in ts[-2:]:
        for epoch in range(5, 9):  # the regime is re-estimated at every 8th result
            report(hs, t, epoch, 0.1 * (t.trial_id + 1) + gain * (epoch - 4) / 4)
    return hs


def test_regime_is_breadth_before_any_trial_trained_past_the_first_judged_rung():
    hs = policy()
    assert hs.depth() is None and hs.regime() == "breadth"


def test_regime_compares_the_leaders_gain_with_the_rungs_spread():
    # spread at rung 4: 75th percentile − median of 0.1 … 0.8 = 0.625 − 0.45 = 0.175;
    # a gain g over 4 epochs projects to g / 4 x (η − 1) x 4 = 3g by the next rung
    flat, steep = rung4_with_followers(0.02), rung4_with_followers(0.1)
    assert not flat.trust.trusted[0]  # a first report at epoch 4 is no evidence about rung 1
    assert flat.depth() == pytest.approx(0.06 / 0.175)
    assert flat.regime() == "breadth"  # curves level off: choose among more
    assert steep.depth() == pytest.approx(0.3 / 0.175)
    assert steep.regime() == "depth"  # leaders still climb: train them on
    # the user sees the regime in how far a new trial must be able to train
    later = PolicyContext.for_test(deadline=1000.0, workers=8)
    assert flat.describe(later).endswith("exploring while a new trial can still reach epoch 8")
    assert steep.describe(later).endswith("exploring while a new trial can still reach epoch 16")


# ------------------------------------------------------------------ rule 4: admission by reach


def timed_policy(**kw):
    """First epochs took 100 s and later ones 10 s on one worker; no start-up observed."""
    hs = policy(**kw)
    t = trial(0)
    report(hs, t, 1, 0.5, seconds=100.0)
    for epoch in (2, 3):
        report(hs, t, epoch, 0.5, seconds=10.0)
    return hs


def at(time_left, scaling=LINEAR, **kw):
    return PolicyContext.for_test(now=0.0, deadline=time_left, workers=8, scaling=scaling, **kw)


def test_a_trial_starts_only_while_it_can_reach_twice_the_first_judged_rung():
    hs = timed_policy()
    assert hs.admission(at(170.0)) == (True, 8.0, 8.0)  # 100 + 7 x 10: epoch 8 = 2 x rung 4
    assert hs.admission(at(169.0))[0] is False
    with_startup = at(180.0, startups=[10.0])  # start-ups count too
    assert hs.admission(with_startup)[0] is True
    assert hs.admission(at(179.0, startups=[10.0]))[0] is False


def test_admission_stays_open_where_a_second_worker_would_not_pay():
    hs = timed_policy()
    flat = ScalingCurve({2: 1.05})  # reallocating could not use the workers
    assert hs.admission(at(100.0, scaling=flat))[0] is True  # better a short trial than idle
    assert hs.admission(at(100.0))[0] is False


def test_in_the_depth_regime_a_trial_must_reach_the_next_rung():
    hs = timed_policy()
    hs.regime = lambda: "depth"  # rule 3 decided elsewhere; here only its use
    assert hs.admission(at(250.0))[0:3:2] == (True, 16)  # 100 + 15 x 10
    assert hs.admission(at(249.0))[0] is False


def test_admission_reopens_when_the_deadline_moves_and_nothing_is_retired():
    hs = timed_policy()
    pending = trial(5, TrialState.PENDING)
    closed = at(100.0, trials={5: pending})
    assert hs.choose_trial_to_run(closed) is None
    assert list(hs.retire(closed)) == []  # kept for a later deadline
    assert hs.choose_trial_to_run(at(1000.0, trials={5: pending})) is pending
    assert "no new trials (epoch 8 out of reach)" in hs.describe(closed)
    assert "exploring while a new trial can still reach epoch 8" in hs.describe(at(1000.0))


def paused_at_rung_4(hs, values):
    """Trials 1, 2 … that recorded ``values`` at epoch 4 after a leader's 0.9, now paused."""
    report(hs, trial(100), 4, 0.9)
    paused = [trial(tid) for tid in range(1, len(values) + 1)]
    for t, value in zip(paused, values, strict=True):
        report(hs, t, 4, value)
        t.state = TrialState.PAUSED
    return paused


def test_with_no_configuration_left_the_most_promising_paused_trial_resumes():
    hs = policy()
    a, b = paused_at_rung_4(hs, [0.5, 0.6])
    ctx = PolicyContext.for_test(workers=8, trials={1: a, 2: b}, offers_left=False)
    assert hs.choose_trial_to_run(ctx) is b


def test_with_admission_closed_idle_workers_resume_the_most_promising_paused_trial():
    hs = timed_policy()
    a, b = paused_at_rung_4(hs, [0.5, 0.6])
    pending = trial(5, TrialState.PENDING)
    idle = at(100.0, trials={1: a, 2: b, 5: pending})
    assert hs.admission(idle)[0] is False
    assert hs.choose_trial_to_run(idle) is b  # not the new configuration: it cannot reach epoch 8
    assert "resuming the best paused" in hs.describe(idle)
    leader = trial(0, best=0.95, since=6, epochs=9)  # a running leader can take the worker
    busy = at(100.0, trials={0: leader, 1: a, 2: b}, scaling=LINEAR)
    assert hs.choose_trial_to_run(busy) is None


# ------------------------------------------------------------------ rule 5: exploitation


def test_workers_are_reallocated_only_once_exploring_is_over():
    hs = timed_policy()
    leaders = [trial(i, best=0.9 - i / 10, since=6, epochs=9) for i in range(3)]
    trials = {t.trial_id: t for t in leaders}
    assert hs.allocate(at(1000.0, trials=trials, scaling=LINEAR)) is None  # still exploring
    targets = hs.allocate(at(100.0, trials=trials, scaling=LINEAR))
    assert targets == {0: 3, 1: 3, 2: 2}  # the paper's UNIFORM split, best first
    top = policy(split="top_job")
    top.admit = hs.admit
    assert top.allocate(at(100.0, trials=trials, scaling=LINEAR)) == {0: 6, 1: 1, 2: 1}


def test_while_exploiting_a_trial_below_its_cutoff_pauses_only_for_a_taker():
    hs = timed_policy()
    report(hs, trial(1), 4, 0.9)
    slow = trial(2)
    recharging = trial(3, best=0.95, since=2)
    ctx = at(100.0, trials={2: slow, 3: recharging}, scaling=LINEAR)
    assert report(hs, slow, 4, 0.2, ctx).decision is CONTINUE  # nobody could use its worker now
    ready = trial(3, best=0.95, since=6)
    slower = trial(4)
    ctx = at(100.0, trials={4: slower, 3: ready}, scaling=LINEAR)
    assert report(hs, slower, 4, 0.1, ctx).decision is PAUSE  # the leader takes the worker


def test_in_the_depth_regime_exploitation_focuses_on_the_running_top():
    hs = timed_policy(min_epochs=30)  # one rung, at epoch 30: no rung judges epochs 10 … 21
    hs.regime = lambda: "depth"
    leader = trial(0, best=0.9, since=6, epochs=20)
    others = [trial(i, best=0.5 + i / 100, epochs=10) for i in range(1, 4)]
    trials = {t.trial_id: t for t in [leader, *others]}
    ctx = at(100.0, trials=trials, scaling=LINEAR)
    verdict = report(hs, others[0], 11, 0.5, ctx)
    assert verdict.decision is PAUSE and "leader" in verdict.reason  # outside the top quarter
    assert report(hs, leader, 21, 0.91, ctx).decision is CONTINUE
    exploring = at(10_000.0, trials=trials, scaling=LINEAR)
    assert report(hs, others[1], 11, 0.51, exploring).decision is CONTINUE  # only while exploiting
    unfocused = timed_policy(min_epochs=30, focus=False)
    unfocused.regime = lambda: "depth"
    assert report(unfocused, others[2], 11, 0.52, ctx).decision is CONTINUE


# ------------------------------------------------------------------ configuration


@pytest.mark.parametrize(
    "params, message",
    [
        ({"eta": 1}, "`eta` is 1, but must be > 1"),
        ({"min_peers": 0}, "`min_peers` is 0, but must be >= 1"),
        ({"probation_pairs": 3}, "`probation_pairs` is 3, but must be >= 4"),
        ({"breadth_reach": 0.5}, "`breadth_reach` is 0.5, but must be >= 1"),
        ({"split": "softmax"}, "`split` is 'softmax'"),
        ({"startup_percentile": -1}, "`startup_percentile` is -1"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(ConfigError, match=message):
        policy(**params)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"probation": -1}, "`probation` is -1, but must be >= 0"),
        ({"probation_floor": 1.2}, "`probation_floor` is 1.2, but must be in [0, 1) (an AUC)"),
        ({"depth_window": 1}, "`depth_window` is 1, but must be >= 2"),
        ({"recharge": -1}, "`recharge` is -1, but must be >= 0"),
        ({"early_signal": "maybe"}, "`early_signal` is 'maybe', but must be one of 'auto', 'trust', 'doubt'"),
        ({"probaton": 2}, "hypersched has no setting `probaton` (its settings: audit, breadth_reach,"),
    ],
)  # fmt: skip
def test_the_params_object_checks_itself_in_one_line(params, message):
    for make in (lambda: HyperSchedParams.of(**params), lambda: policy(**params)):
        with pytest.raises(ConfigError) as err:
            make()
        assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_params_object_is_frozen_and_the_keywords_build_it():
    params = HyperSchedParams(probation=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.probation = 0
    assert policy(probation=2).params == params == policy(params=params).params
    assert policy(params=params, promote=True).params.probation == 2  # keywords change a copy


# ------------------------------------------------------------------ early_signal


def test_trust_judges_at_epoch_1_from_the_first_result_and_never_waits_on_it():
    hs = policy(early_signal="trust")
    assert hs.trust.trusted == [True, True, True] and hs.trust.mode() == "trust"
    report(hs, trial(0), 1, 0.9)
    assert report(hs, trial(1), 1, 0.1).decision is PAUSE  # judged at once, as ASHA
    assert hs.early_signal_state() == "trust: epoch 1 judges from the start (early_signal='trust')"
    assert hs.describe(OPEN).startswith("trusting epoch 1, as told · keeping the top")
    assert " after epoch 1 · " in hs.describe(OPEN)


@pytest.mark.parametrize("told", [False, True])
def test_trust_makes_every_pass_final_as_asha_does(told):
    hs = policy(early_signal="auto" if told else "trust")
    if told:
        hs.tell_early_signal("trust")  # as a what-if forecast tells a clone
    early = trial(0)
    assert report(hs, early, 4, 0.6).decision is CONTINUE  # alone at rung 4
    for tid, value in enumerate([0.7, 0.8, 0.9, 0.95], start=1):
        report(hs, trial(tid), 4, value)
    assert report(hs, early, 5, 0.65).decision is CONTINUE  # not checked again, as in ASHA
    assert policy(early_signal="trust", confirm_peers=2).judging.confirm_peers == 2


def test_trust_stays_trust_whatever_epoch_1_later_shows():
    hs = policy(early_signal="trust")
    for tid in range(32):
        t = trial(tid)
        report(hs, t, 1, 1 - tid / 100)  # each later trial worse at epoch 1 …
        report(hs, t, 4, tid / 100)  # … and better at epoch 4: an inverted first epoch
    assert hs.trust.mode() == "trust" and hs.trust.trusted[0]  # the user said so


@pytest.mark.parametrize("signal", ["auto", "doubt"])
def test_auto_and_doubt_start_in_doubt_and_earning_trust_is_the_switch(signal):
    hs = policy(early_signal=signal)
    assert hs.trust.mode() == "doubt"
    if signal == "doubt":
        assert hs.early_signal_state() == (
            "doubt: epoch 1 not yet shown to predict epoch 4 (0 of 8 pairs)"
        )
        assert hs.describe(OPEN).startswith("doubting epoch 1 until it predicts epoch 4 · ")
    for tid in range(8):
        t = trial(tid)
        report(hs, t, 1, tid / 100)
        report(hs, t, 4, 0.5 + tid / 100)  # the same order at epoch 4: the verdicts hold
    assert hs.trust.mode() == "trust"  # the probation rung earned trust: auto switched
    assert hs.early_signal_state().startswith("trust: epoch 1's verdicts held at epoch 4 (AUC 1.00")


def test_doubt_says_why_it_still_doubts():
    hs = policy(early_signal="doubt")
    for tid in range(8):
        t = trial(tid)
        report(hs, t, 1, tid / 100)
        report(hs, t, 4, 1 - tid / 100)  # inverted
    assert hs.early_signal_state() == (
        "doubt: epoch 1 not yet shown to predict epoch 4 (AUC 0.00 < 0.91 over 8 pairs)"
    )
    assert hs.describe(OPEN).startswith(
        "doubting epoch 1: 0% agreement with epoch 4, 91% needed · "
    )


def test_told_to_trust_mid_search_it_judges_epoch_1_from_the_next_result():
    hs = policy(early_signal="doubt")  # in doubt: epoch 1 records, judges no one
    report(hs, trial(0), 1, 0.9)
    assert report(hs, trial(1), 1, 0.1).decision is CONTINUE
    hs.tell_early_signal("trust")  # what a what-if forecast tells a clone
    assert hs.first_judged() == 0 and hs.early_signal == "trust"
    assert report(hs, trial(2), 1, 0.1).decision is PAUSE
    assert hs.describe(OPEN).startswith("trusting epoch 1, as told · ")


def test_told_to_doubt_a_trusted_epoch_1_puts_it_back_on_probation():
    hs = policy(early_signal="trust")
    hs.tell_early_signal("doubt")
    assert hs.first_judged() == 1 and hs.trust.mode() == "doubt"
    report(hs, trial(0), 1, 0.9)
    assert report(hs, trial(1), 1, 0.1).decision is CONTINUE  # epoch 1 must earn trust again
    hs.tell_early_signal("auto")  # "auto": as it stands
    assert hs.first_judged() == 1 and hs.early_signal == "doubt"


def test_with_one_rung_or_no_probation_there_is_nothing_to_doubt():
    assert policy(max_epochs=3).early_signal_state() == "trust: epoch 1 is the only epoch judged"
    assert policy(probation=0).early_signal_state() == (
        "trust: epoch 1 judges from the start (no epoch on probation)"
    )


def test_is_the_registered_default():
    assert isinstance(create("hypersched", max_epochs=10), HyperSched)


def test_a_single_rung_is_never_on_probation():
    assert policy(max_epochs=3).trust.trusted == [True]  # only rung 1 fits below R = 3


# ------------------------------------------------------------------ end to end


def small_trace(n=32, epochs=16, seed=5):
    """Early plateaus and a few late bloomers, 10 s epochs, 2 s start-ups."""
    rng = np.random.default_rng(seed)
    metrics, seconds = {}, {}
    x = np.arange(1, epochs + 1)
    for c in range(n):
        top, rate = rng.uniform(0.4, 0.95), rng.uniform(0.05, 1.5)
        metrics[c] = top * (1 - np.exp(-rate * x)) + rng.normal(0, 0.01, epochs)
        seconds[c] = np.full(epochs, rng.uniform(8, 12))
        seconds[c][0] *= 3  # a slow first epoch
    return Trace(
        name="small", ids=tuple(range(n)), metrics=metrics, seconds=seconds,
        params={c: {"c": c} for c in range(n)}, scaling=ScalingCurve({2: 1.9, 4: 3.5}),
        startup_seconds=2.0,
    )  # fmt: skip


SETTINGS = SimSettings(workers=4, configs=24, max_epochs=16, min_epochs=1, eta=2)


@pytest.mark.parametrize("deadline", [60.0, 200.0, 600.0])
def test_end_to_end_respects_the_deadline_and_is_deterministic(deadline):
    trace = small_trace()
    rows = [simulate(trace, "hypersched", deadline, 2, SETTINGS, journal=True) for _ in range(2)]
    journal = rows[0].outcome.journal
    assert max(entry["time"] for entry in journal) <= deadline  # nothing past the deadline
    assert rows[0].record.best <= rows[0].record.oracle  # the oracle bounds it
    assert journal == rows[1].outcome.journal  # the same seed replays exactly
    assert rows[0].record.best == rows[1].record.best
    describe = rows[0].driver.policy.describe(rows[0].driver.context())
    assert " · keeping the top " in describe and "\n" not in describe


def test_end_to_end_reallocates_spare_workers_near_the_deadline():
    rows = simulate(small_trace(), "hypersched", 200.0, 2, SETTINGS, journal=True)
    actions = [entry["action"] for entry in rows.outcome.journal]
    assert "Resize" in actions  # a leader grew once exploring was over
