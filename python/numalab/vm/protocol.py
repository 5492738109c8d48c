"""The host's side of the guest protocol (``guest.py`` describes it): find the frames on the data
port, decode each file (base64 of a gzip stream) and check its sha256."""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import zlib

from numalab.exceptions import NumalabError


class ProtocolError(NumalabError):
    """The guest's output is missing or damaged (exit code 1)."""


def read_frames(text: str, mark: str) -> dict[str, bytes]:
    """``{name: contents}`` of the files between ``<mark> BEGIN`` and ``<mark> END``."""
    lines = [ln.rstrip("\r") for ln in text.splitlines()]
    try:
        start = lines.index(f"{mark} BEGIN")
    except ValueError:
        raise ProtocolError("the guest sent no results (no BEGIN frame on the data port)") from None
    files: dict[str, bytes] = {}
    name: str | None = None
    digest = ""
    body: list[str] = []
    for ln in lines[start + 1 :]:
        if ln == f"{mark} END":
            if name is not None:
                raise ProtocolError(f"the guest's file {name} is not closed (no ENDFILE)")
            return files
        if name is None:
            parts = ln.split()
            if len(parts) == 4 and parts[0] == mark and parts[1] == "FILE":
                name, digest, body = parts[2], parts[3], []
                continue
            raise ProtocolError(f"unexpected line on the data port: {ln[:80]!r}")
        if ln == f"{mark} ENDFILE {name}":
            try:
                data = gzip.decompress(base64.b64decode("".join(body), validate=True))
            except (binascii.Error, OSError, EOFError, zlib.error):
                raise ProtocolError(f"the guest's file {name} arrived damaged (not base64 of a gzip stream)") from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise ProtocolError(f"the guest's file {name} arrived damaged (sha256 differs)")
            files[name] = data
            name = None
            continue
        body.append(ln)
    raise ProtocolError("the guest's results end early (no END frame): did the guest stop while sending?")
