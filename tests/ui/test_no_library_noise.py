"""Distributed's warnings about the epochs a search cancels stay out of the notebook; its
other warnings still show.

The workers of a local cluster write to the kernel's stderr, which the notebook shows, so
the test reads the process's stderr as the notebook would.
"""

import time

import pytest

from hypersched_nb.runtime._quiet import LOGGER, is_expected_cancellation
from hypersched_nb.runtime.cluster import start_cluster

CANCELLED = (
    "Async instruction for <Task cancelled name=\"execute('{key}')\" coro=<Worker.execute() "
    "done, defined at .../distributed/worker_state_machine.py:3606>> ended with CancelledError"
)


@pytest.mark.parametrize(
    "message, expected",
    [(CANCELLED.format(key="hs-epoch-2-38-5b144e2295d7"), True),
     (CANCELLED.format(key="hs-start-0-1-af12"), True),
     (CANCELLED.format(key="my-own-task-1"), False),
     ("Unhandled exception in async instruction for execute('hs-epoch-1')", False),
     ("Failed to cancel asyncio task after 30 seconds: execute('hs-epoch-1')", False)],
)  # fmt: skip
def test_only_the_cancellation_of_our_own_tasks_is_expected(message, expected):
    assert is_expected_cancellation(message) is expected


@pytest.mark.cluster
def test_a_worker_of_our_cluster_logs_other_cancellations_but_not_those_of_our_epochs():
    client, close = start_cluster(2)
    try:

        def cancelled_logged(keys) -> list[str]:  # as a worker logs the tasks it cancels
            import logging

            seen: list[str] = []
            handler = logging.Handler()
            handler.emit = lambda record: seen.append(record.getMessage())
            logger = logging.getLogger(LOGGER)
            logger.addHandler(handler)
            try:
                for key in keys:
                    logger.warning(CANCELLED.format(key=key))
            finally:
                logger.removeHandler(handler)
            return seen

        logged = client.run(cancelled_logged, ["hs-epoch-0-1-test", "my-own-task-1"])
    finally:
        close()
    assert len(logged) == 2
    for seen in logged.values():
        assert seen == [CANCELLED.format(key="my-own-task-1")]


@pytest.mark.cluster
def test_closing_a_local_cluster_mid_epoch_says_nothing_about_our_epochs(capfd):
    client, close = start_cluster(2)
    epoch = client.submit(time.sleep, 30, key="hs-epoch-0-1-test", pure=False)
    while not any(client.processing().values()):
        time.sleep(0.1)
    time.sleep(1.0)  # executing on its worker
    close()
    assert epoch.key == "hs-epoch-0-1-test"  # held until here: a released future is cancelled
    err = capfd.readouterr().err
    assert "hs-epoch-0-1-test" not in err
    assert "Worker process still alive" not in err and "Removing worker" not in err


@pytest.mark.parametrize(
    "logger, message, shown",
    [("distributed.scheduler", "Removing worker 'tcp://127.0.0.1:1' caused the cluster to lose "
      "already computed task(s), which will be recomputed elsewhere: {'x'}", False),
     ("distributed.nanny", "Worker process still alive after 4.0 seconds, killing", False),
     ("distributed.scheduler", "Removing worker 'tcp://127.0.0.1:1' (stimulus_id='x')", True),
     ("distributed.nanny", "Restarting worker", True)],
)  # fmt: skip
def test_a_close_drops_only_its_own_records_of_the_workers_it_takes_down(logger, message, shown):
    import logging

    from hypersched_nb.runtime._quiet import closing_quietly

    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    log = logging.getLogger(logger)
    log.addHandler(handler)
    try:
        with closing_quietly():
            log.warning(message)
        log.warning(message)  # after the close: shown as ever
    finally:
        log.removeHandler(handler)
    assert len(seen) == (2 if shown else 1)
