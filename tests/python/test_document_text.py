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
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        document_text({"x": {1, 2}})


def test_nan_and_infinities_are_null():
    """JSON has no spelling for them: null, which SQLite's json functions accept (json wrote NaN)."""
    assert document_text({"a": float("nan"), "b": [float("inf"), -float("inf")]}) == '{"a":null,"b":[null,null]}'
