"""The journal: a search's inputs and decisions, one JSON line each, that a fresh driver and
policy can be fed again to come to the state the search was in."""

import json
import pickle
import random

import fsspec
import pytest

from hypersched_nb import Experiment
from hypersched_nb.core.events import ScaleCluster, WorkersChanged
from hypersched_nb.core.policies import REGISTRY, Policy, create
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.journal import (
    FORMAT,
    AfterReplay,
    Dry,
    EndOfJournal,
    Journal,
    JournalError,
    JournalWriter,
    Replay,
    Tape,
    read_journal,
)
from hypersched_nb.experiment.simulate import SimSettings, replayed
from hypersched_nb.sim.trace import load_trace
from hypersched_nb.testing.state import differences

INPUTS = {"start", "now", "events", "offer", "scaled"}
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


def fed(records: list[dict]):
    """(runtime, clock, inputs) of a driver fed ``records``, on a runtime where nothing
    trains."""
    journal = Journal("memory://test", {"k": "search", "format": FORMAT}, tuple(records))
    tape = Tape(journal)
    dry = Dry(0, checkpoint_dir="memory://x", metric="val_acc", mode="max", seed=0)
    runtime = AfterReplay(dry, tape)
    return runtime, tape, Replay(tape, runtime=runtime)


def dry_replay(policy_name: str, records: list[dict]):
    """A fresh policy and driver fed ``records``: (policy, driver) where the records end."""
    policy = create(policy_name, max_epochs=TRACE.longest, min_epochs=1, eta=4, seed=0)
    dry, tape, replay = fed(records)
    driver = Driver(
        policy, dry, tape, iter(()), deadline=DEADLINE, max_epochs=TRACE.longest,
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


class LateWorkers:
    """A simulated cluster whose new workers arrive ``delay`` seconds after they are asked
    for, as a live one's do (it retires workers at once)."""

    def __init__(self, inner, clock, delay: float):
        self.inner, self.clock, self.delay = inner, clock, delay
        self.present, self.arriving = inner.workers(), None

    def workers(self) -> int:
        return self.present

    def execute(self, ins) -> None:
        if type(ins) is ScaleCluster:
            self.arriving = None
            if ins.workers > self.present:
                self.arriving = (self.clock.now() + self.delay, ins.workers)
                return
            self.present = ins.workers
        self.inner.execute(ins)

    def advance(self, until: float) -> list:
        if self.arriving is None or self.arriving[0] > until:
            return self.inner.advance(until)
        at, workers = self.arriving
        found = self.inner.advance(at)
        if found:
            return found
        self.arriving, self.present = None, workers
        self.inner.execute(ScaleCluster(workers))
        return [WorkersChanged(at, workers)]


class WantsSix(Policy):
    """FIFO on an elastic cluster of 6 workers."""

    name = "wants-six"
    elastic = True

    def cluster_size(self, ctx):
        return 6


def test_a_live_clusters_late_workers_are_journaled_and_replayed_where_they_arrived():
    sim = replayed(TRACE, 0, SimSettings(workers=2, configs=12))
    sim.runtime.max_workers = 6
    records: list[dict] = []
    late = LateWorkers(sim.runtime, sim.clock, delay=30.0)
    offers = iter(sim.offered)
    inputs = Inputs(
        sim.clock, late, offers, record=lambda e: records.append(json.loads(json.dumps(e)))
    )
    live = Driver(
        WantsSix(), late, sim.clock, offers, deadline=DEADLINE, max_epochs=sim.max_epochs,
        journal=True, inputs=inputs, max_workers=6,
    )  # fmt: skip
    out = live.run()
    assert {"k": "scaled", "workers": 2} in records  # asked for 6, 2 there until they came
    # none was started on a worker not there yet: the simulator refuses to over-allocate
    starts = [e["time"] for e in out.journal if e["action"] == "Start"]
    assert starts.count(30.0) == 4  # the four that came were used at once
    assert out.worker_seconds_billed == pytest.approx(2 * 30.0 + 6 * (out.ended_at - 30.0))
    dry, tape, replay = fed(records)
    again = Driver(
        WantsSix(), dry, tape, iter(()), deadline=DEADLINE, max_epochs=sim.max_epochs,
        journal=True, inputs=replay, max_workers=6,
    )  # fmt: skip
    try:
        again.run()
    except EndOfJournal:
        pass
    assert again.outcome.journal == out.journal  # the same decisions, at the same times
    assert again.outcome.worker_seconds_billed == out.worker_seconds_billed


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
    return write_journal_at(str(path), policy, end=end)


def write_journal_at(url: str, policy: str = "asha", *, end: bool = True) -> list[bytes]:
    """A journal of a simulated search at ``url`` (any fsspec URL); its lines."""
    writer = JournalWriter(url)
    writer.write({"k": "search", "format": 1, "id": "t", "started": "2026-11-25T10:00:00",
                  "settings": settings(policy)})  # fmt: skip
    for record in recorded_search(policy):
        writer.write(record)
    if end:
        writer.write({"k": "end", "t": DEADLINE, "status": "finished", "error": None})
    writer.close()
    fs, path = fsspec.core.url_to_fs(url)
    return fs.cat_file(path).splitlines(keepends=True)


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


@pytest.mark.parametrize("url", ["file", "memory://hs-test-torn/journal.jsonl"])
def test_a_search_resumed_from_a_torn_journal_writes_on_from_its_last_whole_line(tmp_path, url):
    url = str(tmp_path / "journal.jsonl") if url == "file" else url
    lines = write_journal_at(url, end=False)
    fs, path = fsspec.core.url_to_fs(url)
    whole = b"".join(lines)
    fs.pipe_file(path, whole[: len(whole) - len(lines[-1]) // 2])  # killed while writing
    journal = read_journal(url)
    assert journal.torn

    writer = JournalWriter.after(journal, muted=False)
    writer.write({"k": "resumed", "t": 1.0, "from": {}})
    writer.close()

    again = read_journal(url)  # the record after the tear is whole, and so is the rest
    assert not again.torn and again.records == (*journal.records, again.records[-1])
    assert again.records[-1] == {"k": "resumed", "t": 1.0, "from": {}}


@pytest.mark.parametrize(
    "content, message",
    [(b"", "holds no whole record"),
     (b'{"k": "trial"}\n', "is not a hypersched_nb journal"),
     (b'{"k": "search", "format": 99, "settings": {}}\n', "has journal format 99, but this hypersched_nb reads formats up to 4: upgrade"),
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


# ------------------------------------------------------------------ one search per journal

HEADER = {"k": "search", "format": 1, "id": "a", "started": "2026-11-25T10:00:00",
          "settings": settings("asha")}  # fmt: skip


def journal_of(tmp_path, *records) -> str:
    """A journal file: the header, then ``records``; its URL."""
    path = tmp_path / "journal.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (HEADER, *records)))
    return str(path)


def refused(url: str) -> str:
    with pytest.raises(JournalError) as info:
        read_journal(url)
    message = str(info.value)
    assert "\n" not in message  # one line, always
    return message


def test_two_searches_in_one_journal_are_refused_naming_the_line_where_the_second_begins(
    tmp_path,
):
    lines = write_journal(tmp_path / "journal.jsonl", end=False)
    second = {**HEADER, "id": "b"}  # a second search appended: the same checkpoint_dir
    (tmp_path / "journal.jsonl").write_bytes(b"".join(lines) + json.dumps(second).encode() + b"\n")
    url = str(tmp_path / "journal.jsonl")
    assert refused(url) == (
        f"line {len(lines) + 1} of {url} begins another search (id 'b') after search 't': two "
        "searches wrote to one journal (the same checkpoint_dir?); split the file before line "
        f"{len(lines) + 1}, and give each search its own checkpoint_dir"
    )
    with pytest.raises(JournalError, match="begins another search"):
        Experiment.open(tmp_path)  # opening it says so too, and replays nothing


@pytest.mark.parametrize(
    "record, problem",
    [({"k": "start", "t": 0.0}, "('start' record) has no `workers`"),
     ({"k": "start", "t": 0.0, "workers": "4"}, "('start' record) has `workers` \"4\", but it must be a whole number"),
     ({"k": "now"}, "('now' record) has no `t`"),
     ({"k": "now", "t": True}, "('now' record) has `t` true, but it must be a number"),
     ({"k": "offer"}, "('offer' record) has no `config`"),
     ({"k": "offer", "config": [1]}, "('offer' record) has `config` [1], but it must be an object or null"),
     ({"k": "events", "events": {}}, "('events' record) has `events` {}, but it must be a list"),
     ({"k": "events", "events": [{"type": "Nope", "time": 1}]},
      "('events' record) has an event of no type this version knows ({\"type\": \"Nope\", \"time\": 1})"),
     ({"k": "events", "events": [3]}, "('events' record) has an event of no type this version knows (3)"),
     ({"k": "events", "events": [{"type": "DeadlineChanged", "time": 1}]},
      "('events' record) has a DeadlineChanged event without the fields it needs ("),
     ({"k": "user", "action": "DeadlineChanged"}, "('user' record) has no `time`"),
     ({"k": "end", "t": 1.0}, "('end' record) has no `status`"),
     ({"k": 7}, "has `k` 7, but a record's `k` is the name of its kind: the journal is damaged")],
    ids=["start-no-workers", "start-workers-text", "now-no-t", "now-t-bool", "offer-no-config",
         "offer-list", "events-not-list", "event-unknown", "event-not-object", "event-fields",
         "user-no-time", "end-no-status", "k-not-a-name"],
)  # fmt: skip
def test_a_record_without_the_fields_its_kind_needs_is_refused_naming_its_line(
    tmp_path, record, problem
):
    url = journal_of(tmp_path, {"k": "start", "t": 0.0, "workers": 4}, record)
    message = refused(url)
    assert message.startswith(f"line 3 of {url} ") and problem in message


def test_a_record_of_a_kind_this_version_does_not_know_is_kept_as_it_is(tmp_path):
    # a later version may add kinds that are not inputs (as decision, hold and capacity are)
    url = journal_of(tmp_path, {"k": "start", "t": 0.0, "workers": 4}, {"k": "note", "x": 1})
    assert read_journal(url).records[-1] == {"k": "note", "x": 1}


@pytest.mark.parametrize(
    "header, lacking",
    [({**HEADER, "settings": None}, "its settings"),
     ({**HEADER, "settings": {k: v for k, v in settings("asha").items() if k not in ("metric", "seed")}},
      "the settings metric, seed"),
     ({k: v for k, v in HEADER.items() if k != "started"}, "its start time (`started`, an ISO time)"),
     ({**HEADER, "started": "yesterday"}, "its start time (`started`, an ISO time)")],
    ids=["no-settings", "settings-missing", "no-started", "started-not-iso"],
)  # fmt: skip
def test_a_first_line_without_what_a_reader_needs_is_refused_in_one_line(tmp_path, header, lacking):
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps(header) + "\n")
    assert refused(str(path)) == (
        f"line 1 of {path} describes a search without {lacking}: the journal is damaged or "
        "was not written by hypersched_nb"
    )
