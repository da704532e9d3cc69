"""The package's version, in a module of its own: what reports it (the relay's welcome, ``status``,
``--version``) imports this leaf rather than the package, which would tie them into a circle."""

__version__ = "0.1.0"
