"""The stored text of a result document (results/text.py): orjson's spelling, pinned by the
version pyproject.toml names, read back by json.loads as the text json.dumps stored before; what
orjson refuses is encoded as before."""

from __future__ import annotations

import json

import numpy as np
import pytest

from numalab.results.text import document_text


def _before(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def test_the_spelling_of_floats_and_text_is_orjsons():
    """A change of orjson that spells these otherwise changes stored texts: this test says so."""
    doc = {"z": [2e-05, 1.5e-07, 1e-06, 1e16, 1.2345e17, 0.1, 1.0, -0.0, 5e-324], "a": {"é": "naïve", "b": None, "a": True}, "n": 3}
    text = document_text(doc)
    assert text == '{"a":{"a":true,"b":null,"é":"naïve"},"n":3,"z":[0.00002,1.5e-7,1e-6,1e+16,1.2345e+17,0.1,1.0,-0.0,5e-324]}'
    assert _before(doc) != text and json.loads(text) == json.loads(_before(doc)) == doc


def test_a_document_orjson_refuses_is_encoded_as_before():
    """Keys that are not strings, numpy scalars, integers beyond 64 bits: json's text, sorted."""
    for doc in ({2: 1e-05, 10: "x"}, {"x": np.float64(2e-05)}, {"big": 2**70, "a": 1e-05}):
        assert document_text(doc) == _before(doc)
    assert document_text({2: 1, 10: 2}) == '{"2":1,"10":2}'


def test_a_document_that_is_not_json_raises_jsons_error():
    """Dates and dataclasses too, which orjson could write: json's error, as before orjson."""
    import dataclasses
    import datetime

    @dataclasses.dataclass
    class Point:
        x: float

    for value, name in (({1, 2}, "set"), (datetime.date(2026, 11, 27), "date"), (Point(1.0), "Point")):
        with pytest.raises(TypeError, match=f"Object of type {name} is not JSON serializable"):
            document_text({"x": value})


def test_nan_and_infinities_are_null():
    """JSON has no spelling for them: null, which SQLite's json functions accept (json wrote NaN)."""
    assert document_text({"a": float("nan"), "b": [float("inf"), -float("inf")]}) == '{"a":null,"b":[null,null]}'


_STUDY = ('name = "t"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 4000, reps = 2, threads = 8 }\n'
          '[sweep]\nplacement = ["default", "interleave=all"]\n')


def test_the_stores_readers_read_old_and_new_texts_alike(cli, tmp_path):
    """A store whose documents are spelled as json.dumps spelled them (runs stored before orjson)
    reads as one spelled by orjson: the same frame of documents, the same `results show` and
    `results show --json`, the same values from SQLite's json functions."""
    import shutil
    import sqlite3

    from numalab.results import load

    study = tmp_path / "t.toml"
    study.write_text(_STUDY)
    code, _, err = cli("study", str(study), "--results", str(tmp_path / "new"), "--workers", "1")
    assert code == 0, err
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    with sqlite3.connect(tmp_path / "old" / "numalab.db") as con:
        texts = con.execute("SELECT hash, result FROM runs").fetchall()
        con.executemany("UPDATE runs SET result = ? WHERE hash = ?", [(_before(json.loads(t)), h) for h, t in texts])
    assert len(texts) == 2
    # The dgemv documents hold floats the two spell differently (the threads' start times).
    assert all(_before(json.loads(t)) != t for _, t in texts)
    frames = [load(tmp_path / which, documents=True) for which in ("old", "new")]
    assert [json.loads(t) for t in frames[0]["result"]] == [json.loads(t) for t in frames[1]["result"]]
    for h, _ in texts:
        for flags in ((), ("--json",)):
            shown = [cli("results", "show", h[:12], "--results", str(tmp_path / which), *flags) for which in ("old", "new")]
            assert shown[0] == shown[1] and shown[0][0] == 0
    query = "SELECT json_extract(result, '$.threads[1].cpu_history[0][0]'), json_extract(result, '$.time_s') FROM runs ORDER BY hash"
    values = []
    for which in ("old", "new"):
        con = sqlite3.connect(tmp_path / which / "numalab.db")
        values.append(con.execute(query).fetchall())
        con.close()
    assert values[0] == values[1] and all(v[0] is not None for v in values[0])
