"""The package version, in a leaf module every layer may import (the runner writes it into
run.json; ``traceviz --version`` prints it)."""

__version__ = "0.1.0"
