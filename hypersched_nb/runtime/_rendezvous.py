"""The worker side of a trial's ``torch.distributed`` group: its rendezvous and joining it.

Rank 0's worker picks a port free on its host (:func:`free_port`, in the hand-over or a task
of its own before the group's first epoch); every rank then joins the group there, on NCCL
with GPUs and gloo without, bounded by the runtime's ``group_timeout``.
"""

from __future__ import annotations

from hypersched_nb.runtime._messages import Rendezvous

__all__ = ["free_port", "join_group", "leave_group"]


def join_group(rendezvous: Rendezvous, rank: int, world: int, backend: str, timeout: float) -> None:
    """Join the group of ``world`` ranks meeting at ``rendezvous`` as ``rank`` (leaving
    any group this process was still in)."""
    from datetime import timedelta

    import torch.distributed as dist

    leave_group()
    host = f"[{rendezvous.host}]" if ":" in rendezvous.host else rendezvous.host
    dist.init_process_group(
        backend, init_method=f"tcp://{host}:{rendezvous.port}", rank=rank, world_size=world,
        timeout=timedelta(seconds=timeout),
    )  # fmt: skip


def leave_group() -> None:
    """Leave the process group this worker is in, if any."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def free_port() -> Rendezvous:
    """A port free now on this worker's host: where rank 0 of the next group will listen."""
    import socket

    from distributed import get_worker
    from distributed.comm import get_address_host

    host = get_address_host(get_worker().address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return Rendezvous(host, s.getsockname()[1])
