"""The task board: what goes to the cluster under which keys, what comes back on its queue,
and which subscriptions it holds on the client."""

from types import SimpleNamespace

from hypersched_nb.runtime._board import (
    EpochTag,
    Finished,
    MembersChanged,
    ReleaseTag,
    TaskBoard,
    WarmTag,
)
from hypersched_nb.runtime._messages import Epoch, Failed, Report

SLOT = SimpleNamespace(addr="tcp://127.0.0.1:1", gpu=False)


class RecordingClient:
    """Just enough of ``distributed.Client``: remembers keys and topic handlers."""

    def __init__(self):
        self.keys, self.handlers, self.callbacks = [], {}, {}

    def subscribe_topic(self, topic, handler):
        self.handlers[topic] = handler  # one handler per topic, as in Dask

    def unsubscribe_topic(self, topic):
        del self.handlers[topic]

    def submit(self, fn, *args, key, **kwargs):
        self.keys.append(key)
        fut = SimpleNamespace(key=key, done=lambda: False)
        fut.add_done_callback = lambda callback: self.callbacks.setdefault(key, callback)
        return fut

    def finish(self, key):
        self.callbacks[key](None)


def test_two_boards_on_one_client_never_share_a_task_key():
    # Dask treats a repeated key as the same task: a second search on the same client would
    # receive the first one's result, or its cancellation, for a trial with the same number.
    client = RecordingClient()
    for board in (TaskBoard(client, 1.0), TaskBoard(client, 1.0)):
        board.submit(print, slot=SLOT, tag=WarmTag(), name="hs-start-0")
        board.submit(print, slot=SLOT, tag=ReleaseTag(0), name="hs-epoch-0")
    assert len(set(client.keys)) == 4
    assert all(key.startswith(("hs-start-0-", "hs-epoch-0-")) for key in client.keys)


def test_a_finished_task_comes_off_the_board_once():
    client = RecordingClient()
    board = TaskBoard(client, 1.0)
    fut = board.submit(print, slot=SLOT, tag=ReleaseTag(3), name="hs-release-3")
    client.finish(fut.key)
    assert board.drain() == [Finished(fut.key)]
    task = board.finish(fut.key)
    assert task.future is fut and task.tag == ReleaseTag(3) and not task.heard
    assert board.finish(fut.key) is None  # read once


def test_an_epoch_heard_by_event_is_marked_so_its_result_is_not_read_again():
    client = RecordingClient()
    board = TaskBoard(client, 1.0)
    fut = board.submit(print, slot=SLOT, tag=EpochTag(0, 1, 0, 1), name="hs-epoch-0")
    report = Report(fut.key, Epoch(1, {"loss": 0.5}, 0.1))
    client.handlers[board.topic]((0.0, report.to_event()))  # the worker's event, plain
    assert board.drain() == [report]  # a record again
    assert board.hear(report).future is fut
    assert board.finish(fut.key).heard
    # an event for a task no longer on the board, or not an epoch's, is nobody's
    assert board.hear(report) is None
    other = board.submit(print, slot=SLOT, tag=WarmTag(), name="hs-warm")
    assert board.hear(Report(other.key, Failed("no"))) is None


def test_membership_news_reach_every_board_on_a_client_and_stop_with_the_last():
    client = RecordingClient()
    first, second = TaskBoard(client, 1.0), TaskBoard(client, 1.0)
    joined = {"action": "add-worker", "worker": "tcp://127.0.0.1:2"}
    client.handlers["all"]((0.0, joined))
    client.handlers["all"]((0.0, {"action": "something-else"}))
    assert first.drain() == second.drain() == [MembersChanged()]
    first.close()
    assert "all" in client.handlers and first.topic not in client.handlers
    client.handlers["all"]((0.0, joined))
    assert second.drain() == [MembersChanged()]
    second.close()
    assert client.handlers == {}  # nothing of the runtime's is left on the client


def test_membership_news_come_once_and_last_in_a_drain():
    client = RecordingClient()
    board = TaskBoard(client, 1.0)
    fut = board.submit(print, slot=SLOT, tag=WarmTag(), name="hs-warm")
    for _ in range(3):
        client.handlers["all"]((0.0, {"action": "remove-worker"}))
    client.finish(fut.key)
    assert board.drain() == [Finished(fut.key), MembersChanged()]


def test_the_workers_are_asked_of_the_scheduler_not_read_from_the_clients_cache():
    # Dask's client refreshes its cached identity every 2 s without the workers; read then
    # (or after a failed query) the cache said every worker had left, and their trials were
    # reported lost
    worker = {"tcp://127.0.0.1:1": {"name": 0, "status": "running"}}
    client = RecordingClient()
    client.scheduler = SimpleNamespace(
        identity=lambda n_workers=0: {"workers": worker if n_workers == -1 else {}}
    )
    client.sync = lambda fn, *args, **kwargs: fn(*args, **kwargs)
    client.scheduler_info = lambda n_workers=-1: {"workers": {}}  # as the refresh leaves it
    assert TaskBoard(client, 1.0).workers() == worker
