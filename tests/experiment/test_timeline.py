"""The events a snapshot hands out: the decisions and the user's acts, oldest first, in the
order of one stable sort by time, however they came between two reads."""

import random

from hypersched_nb.experiment._timeline import Timeline


def at(t: float, who: str) -> dict:
    return {"time": t, "who": who}


def one_sort(journal, acts):
    return sorted(journal + acts, key=lambda e: e["time"])


def test_what_came_since_the_last_read_is_put_in_order_as_one_sort_would():
    journal, acts, timeline = [], [], Timeline()
    journal += [at(1.0, "d0"), at(2.0, "d1")]
    assert timeline.read(journal, acts) == one_sort(journal, acts)
    acts.append(at(2.0, "u0"))  # at the same time as a decision: after it
    journal.append(at(2.0, "d2"))  # a decision at that time too: before the act
    assert timeline.read(journal, acts) == one_sort(journal, acts)
    acts.append(at(1.5, "u1"))  # dated before what it holds: all in order again
    journal.append(at(3.0, "d3"))
    assert [e["who"] for e in timeline.read(journal, acts)] == ["d0", "u1", "d1", "d2", "u0", "d3"]
    assert timeline.read(journal, acts) == one_sort(journal, acts)  # nothing new: the same


def test_any_interleaving_of_reads_gives_the_order_of_one_sort():
    rng = random.Random(7)
    for _ in range(50):
        journal, acts, timeline, now = [], [], Timeline(), 0.0
        for i in range(60):
            now += rng.choice([0.0, 0.5, 1.0])
            if rng.random() < 0.2:
                acts.append(at(now - rng.choice([0.0, 2.0]), f"u{i}"))
            else:
                journal.append(at(now, f"d{i}"))
            if rng.random() < 0.3:
                assert timeline.read(journal, acts) == one_sort(journal, acts)
        assert timeline.read(journal, acts) == one_sort(journal, acts)


def test_another_journal_is_read_anew():
    timeline = Timeline()
    timeline.read([at(1.0, "a"), at(2.0, "b")], [])
    assert timeline.read([at(5.0, "c")], []) == [at(5.0, "c")]
