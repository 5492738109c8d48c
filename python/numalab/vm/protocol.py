"""The host's side of the guest protocol (``guest.py`` describes it): find the frames on the data
port, decode each file (base64 of a gzip stream) and check its sha256."""

from __future__ import annotations

import base64
import binascii
import hashlib
import zlib

from numalab.exceptions import NumalabError


class ProtocolError(NumalabError):
    """The guest's output is missing or damaged (exit code 1)."""


#: The most the host reads from the data port, and the most one file may unpack to: the guest
#: caps the command's output (guest.OUTPUT_CAP), so only a flood written to the port itself or
#: a forged stream goes past these.
MAX_PORT_BYTES = 256 << 20
MAX_FILE_BYTES = 256 << 20


def read_port(path) -> str:
    """The data port's text, refused (ProtocolError) above ``MAX_PORT_BYTES``."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ""
    if size > MAX_PORT_BYTES:
        raise ProtocolError(f"the guest wrote {size / 2**20:.1f} MiB to the data port, more than the {MAX_PORT_BYTES >> 20} MiB read back "
                            "(did the command write to /dev/ttyS1?)")
    with open(path, "rb") as f:
        return f.read(MAX_PORT_BYTES).decode(errors="replace")


def _gunzip(data: bytes, name: str) -> bytes:
    """``data`` decompressed, at most ``MAX_FILE_BYTES`` of it (a small stream may unpack to gigabytes)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data, MAX_FILE_BYTES)
    if d.unconsumed_tail:
        raise ProtocolError(f"the guest's file {name} unpacks to more than {MAX_FILE_BYTES >> 20} MiB")
    if not d.eof or d.unused_data:
        raise ProtocolError(f"the guest's file {name} arrived damaged (not base64 of a gzip stream)")
    return out


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
                data = _gunzip(base64.b64decode("".join(body), validate=True), name)
            except (binascii.Error, zlib.error):
                raise ProtocolError(f"the guest's file {name} arrived damaged (not base64 of a gzip stream)") from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise ProtocolError(f"the guest's file {name} arrived damaged (sha256 differs)")
            files[name] = data
            name = None
            continue
        body.append(ln)
    raise ProtocolError("the guest's results end early (no END frame): did the guest stop while sending?")
