"""The ``numalab`` command line (typer). ``main.py`` builds the app; one module per command."""
