"""The shared JSON file: reads cached by file identity and re-read when another process writes, and
files a child may have planted read without following links, blocking or exhausting memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.store.json_file import SETTLED_S, JsonFile, Unreadable, read_untrusted


def counting(path: Path) -> tuple[JsonFile[Any], list[Any]]:
    parsed: list[Any] = []

    def parse(data: Any) -> Any:
        parsed.append(data)
        return data

    return JsonFile(path, parse), parsed


def settle(path: Path) -> None:
    """Date the file's last change back past `SETTLED_S`, as if written a while ago."""
    past = time.time_ns() - int(10 * SETTLED_S * 1e9)
    os.utime(path, ns=(past, past))


def test_an_unchanged_file_is_parsed_once(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text('{"a": 1}')
    settle(path)
    file, parsed = counting(path)
    assert [file.read() for _ in range(5)] == [{"a": 1}] * 5
    assert len(parsed) == 1


def test_a_write_by_another_process_is_seen_on_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    file, parsed = counting(path)
    with file.locked():
        file.publish({"v": 1})
    assert file.read() == {"v": 1}
    script = (
        "import sys; from pathlib import Path; from bridge.store.json_file import JsonFile\n"
        "f = JsonFile(Path(sys.argv[1]), lambda d: d)\n"
        "with f.locked(): f.publish({'v': 2})\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    assert file.read() == {"v": 2}
    assert len(parsed) == 2


def test_a_file_changed_just_now_is_read_again_even_when_it_looks_the_same(tmp_path: Path) -> None:
    """Racy git: a rewrite within the timestamp granularity, on a reused inode, keeps every stat field."""
    path = tmp_path / "f.json"
    path.write_text('{"v": 1}')
    file, _ = counting(path)
    assert file.read() == {"v": 1}
    info = os.stat(path)
    path.write_text('{"v": 2}')  # same inode, same size
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # same mtime
    assert file.read() == {"v": 2}


def test_a_missing_file_reads_as_none_and_a_bad_one_as_unreadable(tmp_path: Path) -> None:
    file, _ = counting(tmp_path / "f.json")
    assert file.read() is None
    (tmp_path / "f.json").write_text("{not json")
    with pytest.raises(Unreadable, match="not valid JSON"):
        file.read()


def test_a_small_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"servers": {}}))
    assert read_untrusted(path, 1000) == b'{"servers": {}}'
    assert read_untrusted(tmp_path / "missing.json", 1000) is None


def test_a_fifo_is_refused_at_once_instead_of_blocking(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    os.mkfifo(path)
    with pytest.raises(Unreadable, match="not a regular file"):
        read_untrusted(path, 1000)


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "servers.json").symlink_to(tmp_path / "real.json")
    with pytest.raises(Unreadable, match="cannot open"):
        read_untrusted(tmp_path / "servers.json", 1000)


def test_a_symlink_to_dev_zero_is_neither_followed_nor_read_forever(tmp_path: Path) -> None:
    (tmp_path / "servers.json").symlink_to("/dev/zero")
    with pytest.raises(Unreadable):
        read_untrusted(tmp_path / "servers.json", 1000)


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Unreadable, match="not a regular file"):
        read_untrusted(Path("/dev/zero"), 1000)


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b" " * 1001)
    with pytest.raises(Unreadable, match="larger than 1000 bytes"):
        read_untrusted(path, 1000)
