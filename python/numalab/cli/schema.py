"""``numalab schema``: the JSON Schema of study files (for editors and validators)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def schema(output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout.")) -> None:
    """Print the JSON Schema of study files (pydantic's, with descriptions and units)."""
    from numalab.study.model import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        from numalab.results.frame import writable_file
        from numalab.results.outfile import check_output, write_text_atomic

        writable_file(output, "--output", "numalab-study.schema.json")
        check_output(output, "--output")
        write_text_atomic(output, text, "--output")
        typer.echo(f"wrote {output}", err=True)
