"""The task board: what goes to the cluster, and under which keys."""

from types import SimpleNamespace

from hypersched_nb.runtime._board import TaskBoard


class RecordingClient:
    """Just enough of ``distributed.Client``: remembers the keys it is given."""

    def __init__(self):
        self.keys = []

    def subscribe_topic(self, topic, handler):
        pass

    def submit(self, fn, *args, key, **kwargs):
        self.keys.append(key)
        return SimpleNamespace(key=key, add_done_callback=lambda callback: None)


def test_two_boards_on_one_client_never_share_a_task_key():
    # Dask treats a repeated key as the same task: a second search on the same client would
    # receive the first one's result, or its cancellation, for a trial with the same number.
    client, slot = RecordingClient(), SimpleNamespace(addr="tcp://127.0.0.1:1", gpu=False)
    for board in (TaskBoard(client, 1.0), TaskBoard(client, 1.0)):
        board.submit(print, slot=slot, tag=("start", 0), name="hs-start-0")
        board.submit(print, slot=slot, tag=("epoch", 0), name="hs-epoch-0")
    assert len(set(client.keys)) == 4
    assert all(key.startswith(("hs-start-0-", "hs-epoch-0-")) for key in client.keys)
