"""The package's version, in a module of its own: every layer may name it without importing the package's public
names (`ncuadvisor.analyze` and the rest, loaded on first use by `ncuadvisor/__init__.py`)."""

__version__ = "0.1.0"
