"""`PipeWriter` and `PipeReader`: a pipe written and read on the loop, for the host's stdio and each child's."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskStatus

from bridge.downstream.framing import READ_SIZE, PipeReader, PipeWriter

BIG = b"x" * (1 << 20) + b"\n"  # far past a pipe's 64 KiB buffer: many partial writes


async def test_a_line_longer_than_the_pipe_buffer_arrives_whole_and_alone() -> None:
    read, write = os.pipe()
    writer = PipeWriter(write)
    received = bytearray()

    async def reader() -> None:
        while chunk := await anyio.to_thread.run_sync(os.read, read, 65536):
            received.extend(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        async with anyio.create_task_group() as writers:  # two at once: lines never interleave
            writers.start_soon(writer.send, BIG)
            writers.start_soon(writer.send, b"short\n")
        writer.close()
    os.close(read)
    assert sorted(bytes(received).splitlines(keepends=True)) == sorted([BIG, b"short\n"])


async def test_closing_wakes_a_send_waiting_on_a_full_pipe() -> None:
    read, write = os.pipe()
    writer = PipeWriter(write)
    outcome: list[type[BaseException]] = []

    async def send(*, task_status: TaskStatus[None]) -> None:
        task_status.started()
        try:
            await writer.send(BIG)  # nobody reads: it fills the pipe and waits
        except anyio.ClosedResourceError as exc:
            outcome.append(type(exc))

    async with anyio.create_task_group() as tg:
        await tg.start(send)
        await anyio.wait_all_tasks_blocked()
        writer.close()
    os.close(read)
    assert outcome == [anyio.ClosedResourceError]
    with pytest.raises(anyio.ClosedResourceError):
        await writer.send(b"after\n")


async def test_a_reader_gone_is_a_broken_pipe() -> None:
    read, write = os.pipe()
    os.close(read)
    writer = PipeWriter(write)
    with pytest.raises(BrokenPipeError):
        await writer.send(b"line\n")
    writer.close()


async def test_a_reader_whose_input_never_runs_dry_still_lets_the_loop_run_other_tasks(tmp_path: Path) -> None:
    """A child flooding its stdout is read without a wait between chunks; each chunk still yields
    to the loop once, so the session reading it cannot starve the host's calls."""
    flood = tmp_path / "flood"
    flood.write_bytes(b"x" * (READ_SIZE * 16))  # a file: every read returns at once
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0)

    fd = os.open(flood, os.O_RDONLY)
    reader = PipeReader(fd)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        chunks = [chunk async for chunk in reader]
        tg.cancel_scope.cancel()
    reader.close()
    assert len(chunks) == 16
    assert ticks >= 15  # a turn between every two chunks
