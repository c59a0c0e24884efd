"""seqlab.base.io: atomic writes leave either the old file or the new one, never a part, and no temporary files;
JSON reads turn every bad file into one SeqlabError line naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import seqlab
from seqlab.base.errors import SeqlabError
from seqlab.base.io import atomic_path, copy_atomic, read_json, read_metrics, versions, write_bytes_atomic, \
    write_json_atomic, write_text_atomic


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
    source = tmp_path / "big.bin"
    source.write_bytes(bytes(range(256)) * 5000)  # more than one block of copy_atomic
    copy_atomic(source, path)
    assert path.read_bytes() == source.read_bytes() and sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


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


def test_read_json_names_the_file_and_the_fix(tmp_path):
    path = tmp_path / "labels.json"
    write_json_atomic(path, {"kind": "labels"})
    assert read_json(path, "label vocabulary", expect=dict) == {"kind": "labels"}
    bad = {name: tmp_path / f"{name}.json" for name in ("latin1", "broken", "array")}
    bad["latin1"].write_bytes(b"\xff\xfe{}")
    bad["broken"].write_text("{oops")
    bad["array"].write_text("[1, 2]")
    cases = [(tmp_path / "absent.json", r"label vocabulary file not found: .*absent\.json; retrain"),
             (tmp_path, "is a directory; give the label vocabulary JSON file inside it"),
             (bad["latin1"], r"not a valid label vocabulary JSON file \(not UTF-8: .* byte 0\); retrain"),
             (bad["broken"], r"not a valid label vocabulary JSON file \(Expecting .*\); retrain"),
             (bad["array"], r"holds a JSON array, not a JSON object\); retrain")]
    for where, message in cases:
        with pytest.raises(SeqlabError, match=message) as info:
            read_json(where, "label vocabulary", "retrain", expect=dict)
        assert "\n" not in str(info.value)


def test_read_metrics_and_versions(tmp_path):
    assert read_metrics(tmp_path / "metrics.jsonl") == []
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 2.5}\n\n{"step": 2, "loss": 2.0}\n')
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2]
    assert versions("numpy") == {"seqlab": seqlab.__version__, "numpy": np.__version__}
