"""Entry point: builds the typer app and turns every error into one line, ``numalab: <what>``.

Exit codes: 0 ok, 1 a failure (a run or the host failed), 2 a usage error (bad option, unknown
name, malformed file). A traceback is shown only with ``--debug`` or ``NUMALAB_BACKTRACE=1``.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

import click
import typer

from numalab.cli import bench, compare, report, results, schema, sim, study, suggest, topo, tune, vm, workloads
from numalab.cli import run as run_cmd
from numalab.exceptions import USAGE_ERRORS, NumalabError
from numalab.runner.host import Terminated
from numalab.console.text import printable
import numalab.kinds  # noqa: F401  (registers every study kind: study, report and the workers find them)

class _HelpFormatter(click.HelpFormatter):
    """typer escapes ``[required]``/``[default: ...]`` for rich markup even in plain help; undo it."""

    def write_dl(self, rows, *args, **kwargs):  # type: ignore[override]
        rows = [(a, b.replace("\\[", "[")) for a, b in rows]
        super().write_dl(rows, *args, **kwargs)


click.Context.formatter_class = _HelpFormatter

app = typer.Typer(
    name="numalab",
    help="Where should the memory and the threads go? Simulate, measure and compare NUMA placement.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("topo")(topo.topo)
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}
app.command("sim", context_settings=_PASS_THROUGH)(sim.sim)
app.command("compare", context_settings=_PASS_THROUGH)(compare.compare)
app.command("workloads")(workloads.workloads)
app.command("study")(study.study)
app.command("schema")(schema.schema)
app.add_typer(results.app, name="results")
app.command("report")(report.report)
app.add_typer(vm.app, name="vm")
app.command("run", context_settings=run_cmd.CONTEXT)(run_cmd.run)
app.command("bench", context_settings=bench.CONTEXT)(bench.bench)
app.command("tune", context_settings=tune.CONTEXT)(tune.tune)
from numalab.cli import lb  # noqa: E402
app.command("lb", context_settings=lb.CONTEXT)(lb.lb)
from numalab.cli import sensitivity  # noqa: E402
app.command("sensitivity", context_settings=_PASS_THROUGH)(sensitivity.sensitivity)
from numalab.cli import advise  # noqa: E402
app.command("advise", context_settings=_PASS_THROUGH)(advise.advise)
from numalab.cli import import_profile  # noqa: E402
app.command("import")(import_profile.import_profile)
from numalab.cli import calibrate  # noqa: E402
app.command("calibrate")(calibrate.calibrate)
from numalab.cli import check  # noqa: E402
app.command("check")(check.check)

_debug = False


@app.callback()
def _main(debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors.")) -> None:
    global _debug
    _debug = debug


def _fail(msg: str, code: int) -> None:
    if _debug or os.environ.get("NUMALAB_BACKTRACE") == "1":
        traceback.print_exc()
    print(f"numalab: {printable(msg, lines=True)}", file=sys.stderr)
    sys.exit(code)


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    global _debug
    _debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        rc = app(args=argv, prog_name="numalab", standalone_mode=False)
        # Without standalone mode click returns the code of a typer.Exit instead of exiting.
        if isinstance(rc, int) and rc != 0:
            sys.exit(rc)
    except click.exceptions.Exit as e:
        if e.exit_code == 130:  # typer turns Ctrl-C into a silent Exit(130)
            _fail("interrupted", 130)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        _fail("interrupted", 130)
    except click.NoSuchOption as e:
        _fail(suggest.no_such_option(e), 2)
    except click.UsageError as e:
        _fail(suggest.usage_message(e), 2)
    except click.ClickException as e:
        _fail(e.format_message(), e.exit_code)
    except USAGE_ERRORS as e:
        _fail(str(e.args[0]) if e.args else str(e), 2)
    except NumalabError as e:
        _fail(str(e.args[0]) if e.args else str(e), 1)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Terminated as e:
        _fail("interrupted" if e.signum == signal.SIGINT else f"terminated by {signal.Signals(e.signum).name}", e.exit_code)
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    run()
