"""seqlab.io: atomic writes leave either the old file or the new one, never a part, and no temporary files."""

from __future__ import annotations

import json

import pytest

from seqlab.errors import SeqlabError
from seqlab.io import atomic_path, write_bytes_atomic, write_json_atomic, write_text_atomic


def test_writes_create_folders_and_replace(tmp_path):
    path = tmp_path / "a" / "b" / "f.json"
    write_json_atomic(path, {"x": "é"})
    assert path.read_text(encoding="utf-8") == '{"x": "é"}\n'
    write_json_atomic(path, [1, 2], indent=1)
    assert json.loads(path.read_text()) == [1, 2]
    write_text_atomic(path, "t\n")
    assert path.read_text() == "t\n"
    write_bytes_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


def test_an_error_mid_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "model.png"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(path) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp != path
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.png"]
    with pytest.raises(TypeError):
        write_json_atomic(path, {"not json": object()})
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.png"]


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(SeqlabError, match="is a directory"):
        write_text_atomic(tmp_path, "x")
