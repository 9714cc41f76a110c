"""The journal: a search's inputs and decisions, one JSON line each, that a fresh driver and
policy can be fed again to come to the state the search was in."""

import json
import pickle
import random

import pytest

from hypersched_nb import Experiment
from hypersched_nb.core.policies import REGISTRY, create
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.journal import (
    Dry,
    EndOfJournal,
    Journal,
    JournalError,
    JournalWriter,
    Replay,
    read_journal,
)
from hypersched_nb.experiment.simulate import SimSettings, replayed
from hypersched_nb.sim.trace import load_trace
from hypersched_nb.testing.state import differences

INPUTS = {"start", "now", "events", "offer"}
DEADLINE = 400.0
TRACE = load_trace("digits-cnn")


def settings(policy: str) -> dict:
    return {
        "trainable": None, "space": None, "metric": "val_acc", "mode": "max",
        "deadline": DEADLINE, "max_epochs": TRACE.longest, "min_epochs": 1, "eta": 4, "policy": policy,
        "policy_params": None, "seed": 0, "sampler": None, "configs": 40,
        "checkpoint_dir": "memory://no-checkpoints", "scaling": None, "target": None,
    }  # fmt: skip


def recorded_search(policy_name: str, *, states: list | None = None) -> list[dict]:
    """A simulated search of the digits trace, journaled: its records as the journal holds
    them (through JSON); ``states`` gets the pickled policy and trials as each input is read."""
    sim = replayed(TRACE, 0, SimSettings(workers=4, configs=40))
    policy = create(policy_name, max_epochs=sim.max_epochs, min_epochs=1, eta=4, seed=0)
    trials: dict = {}
    records: list[dict] = []

    def record(entry: dict) -> None:
        if states is not None and entry["k"] in INPUTS:
            states.append(pickle.dumps((policy, trials)))
        records.append(json.loads(json.dumps(entry)))

    offers = iter(sim.offered)
    inputs = Inputs(sim.clock, sim.runtime, offers, record=record)
    driver = Driver(
        policy, sim.runtime, sim.clock, offers, deadline=DEADLINE,
        max_epochs=sim.max_epochs, scaling=sim.scaling, journal=True, inputs=inputs,
    )  # fmt: skip
    trials.update(driver.trials)
    driver.trials = trials  # the same dict from here on: the states see its changes
    driver.run()
    return records


def dry_replay(policy_name: str, records: list[dict]):
    """A fresh policy and driver fed ``records``: (policy, driver) where the records end."""
    journal = Journal("memory://test", {"k": "search", "format": 1}, tuple(records))
    policy = create(policy_name, max_epochs=TRACE.longest, min_epochs=1, eta=4, seed=0)
    replay = Replay(journal)
    dry = Dry(0, checkpoint_dir="memory://x", metric="val_acc", mode="max", seed=0)
    driver = Driver(
        policy, dry, replay, iter(()), deadline=DEADLINE, max_epochs=TRACE.longest,
        scaling=TRACE.scaling, journal=True, inputs=replay,
    )  # fmt: skip
    try:
        driver.run()
    except EndOfJournal:
        pass
    return policy, driver


@pytest.mark.parametrize("policy_name", sorted(REGISTRY))
def test_fed_any_prefix_of_its_journal_a_fresh_policy_comes_to_the_same_state(policy_name):
    states: list = []
    records = recorded_search(policy_name, states=states)
    inputs = [i for i, r in enumerate(records) if r["k"] in INPUTS]
    cuts = sorted(random.Random(policy_name).sample(range(1, len(inputs)), 10))
    for n in cuts:  # the journal holds the first n inputs (and what came between them)
        prefix = records[: inputs[n]]
        policy, driver = dry_replay(policy_name, prefix)
        assert differences(pickle.loads(states[n]), (policy, driver.trials)) == [], n
        decided = [{k: v for k, v in r.items() if k != "k"} for r in prefix if r["k"] == "decision"]
        assert driver.outcome.journal[: len(decided)] == decided


def test_the_comparison_of_states_sees_what_the_search_changed():
    states: list = []
    recorded_search("asha", states=states)
    first, last = pickle.loads(states[0]), pickle.loads(states[-1])
    assert differences(first, last) != [] and differences(last, pickle.loads(states[-1])) == []


def test_fed_its_whole_journal_a_fresh_driver_ends_as_the_search_did():
    records = recorded_search("hypersched")
    _, driver = dry_replay("hypersched", records)
    decided = [{k: v for k, v in r.items() if k != "k"} for r in records if r["k"] == "decision"]
    assert driver.outcome.journal == decided


def write_journal(path, policy: str = "asha", *, end: bool = True) -> list[bytes]:
    """A journal file of a simulated search; its lines."""
    writer = JournalWriter(str(path))
    writer.write({"k": "search", "format": 1, "id": "t", "started": "2026-11-25T10:00:00",
                  "settings": settings(policy)})  # fmt: skip
    for record in recorded_search(policy):
        writer.write(record)
    if end:
        writer.write({"k": "end", "t": DEADLINE, "status": "finished", "error": None})
    writer.close()
    return path.read_bytes().splitlines(keepends=True)


def test_open_reads_the_search_a_journal_holds(tmp_path):
    write_journal(tmp_path / "journal.jsonl")
    exp = Experiment.open(tmp_path)  # the folder: the journal beside the checkpoints
    snap = exp.statistics()
    assert snap.status == "finished" and snap.policy == "asha" and snap.deadline == DEADLINE
    assert exp.best is not None and exp.best.metric == exp.results()["best"].max()
    assert len(exp.events) > 0 and exp.wait() is True  # over: nothing to wait for
    assert not exp.results().empty


def test_a_journal_cut_anywhere_in_its_last_three_records_still_opens(tmp_path):
    lines = write_journal(tmp_path / "whole.jsonl", end=False)
    whole = b"".join(lines)
    start = len(whole) - sum(len(line) for line in lines[-3:])
    cut = tmp_path / "cut.jsonl"
    for offset in range(start, len(whole) + 1):
        cut.write_bytes(whole[:offset])
        journal = read_journal(cut)
        assert journal.torn == (not whole[:offset].endswith(b"\n"))
        exp = Experiment.open(cut)
        kept = len(whole[:offset].splitlines(keepends=True)) - journal.torn  # whole lines
        lost_input = any(json.loads(line)["k"] in INPUTS for line in lines[kept:])
        # cut before its last input: as it was then; after: as it ended, which the inputs say
        assert exp.statistics().status == ("interrupted" if lost_input else "finished")
        assert exp.best is not None


@pytest.mark.parametrize(
    "content, message",
    [(b"", "holds no whole record"),
     (b'{"k": "trial"}\n', "is not a hypersched_nb journal"),
     (b'{"k": "search", "format": 99, "settings": {}}\n', "has journal format 99, but this hypersched_nb reads format 1: upgrade"),
     (b'{"k": "search", "format": 1, "settings": {}}\nnot json\n{"k": "now", "t": 1}\n', "line 2 of"),
     (b"[1, 2]\n", "is not a journal record")],
)  # fmt: skip
def test_what_is_not_a_journal_of_this_format_is_refused_in_one_line(tmp_path, content, message):
    path = tmp_path / "journal.jsonl"
    path.write_bytes(content)
    with pytest.raises(JournalError, match=message.replace("(", r"\(")) as info:
        read_journal(path)
    assert "\n" not in str(info.value)


def test_a_folder_without_a_journal_says_where_it_looked(tmp_path):
    with pytest.raises(JournalError, match=f"no journal at {tmp_path}/journal.jsonl"):
        Experiment.open(tmp_path)
