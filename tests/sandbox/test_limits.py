"""Per-child limits hold, and a child that ran into one is recognisable as such."""

from __future__ import annotations

import pytest
from sandbox_box import Box

from sandbox import Limits, explain_exit

MIB = 1 << 20
ALLOCATE = "import sys; b = bytearray(int(sys.argv[1]) * (1 << 20)); print('allocated')"
FORK = (
    "import subprocess, sys\n"
    "procs = [subprocess.Popen(['/bin/sleep', '5']) for _ in range(int(sys.argv[1]))]\n"
    "print('forked', len(procs))\n"
    "[p.kill() for p in procs]\n"
)
WRITE = "import sys; open('big', 'wb').write(b'x' * int(sys.argv[1]) * 1024); print('written')"


def run(box: Box, code: str, arg: str, limits: Limits) -> tuple[int, str, str]:
    proc = box.run(box.launch(box.python, ["-I", "-c", code, arg], limits=limits))
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.bwrap
def test_allocation_past_the_memory_limit_fails_and_is_reported(box: Box) -> None:
    limits = Limits(memory_bytes=512 * MIB)
    code, out, err = run(box, ALLOCATE, "1024", limits)
    assert code != 0 and "allocated" not in out
    assert explain_exit(code, err, limits) == (
        "limit hit: memory (the sandbox's per-child limit of 512 MiB); raise it in the sandbox limits"
    )


@pytest.mark.bwrap
def test_allocation_under_the_memory_limit_succeeds(box: Box) -> None:
    code, out, _ = run(box, ALLOCATE, "64", Limits(memory_bytes=512 * MIB))
    assert (code, out) == (0, "allocated\n")


@pytest.mark.bwrap
def test_fork_bomb_is_capped_and_reported(box: Box) -> None:
    limits = Limits(processes=16)
    code, out, err = run(box, FORK, "64", limits)
    assert code != 0 and "forked" not in out
    assert (explain_exit(code, err, limits) or "").startswith("limit hit: processes")


@pytest.mark.bwrap
def test_a_few_processes_under_the_limit_start(box: Box) -> None:
    code, out, _ = run(box, FORK, "4", Limits(processes=16))
    assert (code, out) == (0, "forked 4\n")


@pytest.mark.bwrap
def test_big_file_is_capped_and_reported(box: Box) -> None:
    limits = Limits(file_bytes=MIB)
    code, out, err = run(box, WRITE, "4096", limits)
    assert code != 0 and "written" not in out  # python ignores SIGXFSZ, so the write fails with EFBIG
    assert (box.ws / "big").stat().st_size == MIB
    assert (explain_exit(code, err, limits) or "").startswith("limit hit: file size")


@pytest.mark.bwrap
def test_file_under_the_size_limit_is_written(box: Box) -> None:
    code, out, _ = run(box, WRITE, "256", Limits(file_bytes=MIB))
    assert (code, out) == (0, "written\n")


def test_a_child_killed_by_sigxfsz_is_reported_as_the_file_size_limit() -> None:
    assert (explain_exit(128 + 25, "", Limits()) or "").startswith("limit hit: file size")
    assert (explain_exit(-25, "", Limits()) or "").startswith("limit hit: file size")


def test_ordinary_failure_is_not_called_a_limit() -> None:
    assert explain_exit(1, "Traceback ...\nValueError: bad config\n", Limits()) is None
    assert explain_exit(0, "", Limits()) is None


def test_open_file_exhaustion_is_reported() -> None:
    err = "OSError: [Errno 24] Too many open files: 'x'"
    assert (explain_exit(1, err, Limits()) or "").startswith("limit hit: open files")


def test_a_disabled_limit_is_never_blamed() -> None:
    assert explain_exit(1, "MemoryError", Limits(memory_bytes=None)) is None
