"""A small SSH server for the several-hosts tests, run inside a host's network namespace:
what ``sshd`` does for ``distributed.SSHCluster``, on keys made for the test.

    python tests/hosts/ssh_server.py HOST PORT HOST_KEY AUTHORIZED_KEYS

Each command a client runs goes to ``sh -c`` on this host, its output streamed back as it
comes (SSHCluster reads a worker's address from its stderr); a command whose session
closes first (SSHCluster's close) is killed with its process group. Public-key
authentication only. Prints ``listening`` once it accepts connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys

import asyncssh


async def run(process: asyncssh.SSHServerProcess) -> None:
    proc = subprocess.Popen(
        process.command or "sh", shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    await process.redirect(stdin=proc.stdin, stdout=proc.stdout, stderr=proc.stderr)
    closed = asyncio.ensure_future(process.channel.wait_closed())
    while proc.poll() is None and not closed.done():
        await asyncio.sleep(0.1)
    if proc.poll() is None:  # the session closed first
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return
    closed.cancel()
    with contextlib.suppress(Exception):  # the client may have gone meanwhile
        await process.stdout.drain()
        await process.stderr.drain()
    process.exit(proc.returncode)


class KeysOnly(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return True  # authentication needed: by a key of AUTHORIZED_KEYS

    def public_key_auth_supported(self) -> bool:
        return True


async def serve(host: str, port: int, host_key: str, authorized: str) -> None:
    await asyncssh.create_server(
        KeysOnly, host, port, server_host_keys=[host_key], authorized_client_keys=authorized,
        process_factory=run, encoding=None,
    )  # fmt: skip
    print("listening", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    host, port, host_key, authorized = sys.argv[1:5]
    asyncio.run(serve(host, int(port), host_key, authorized))
