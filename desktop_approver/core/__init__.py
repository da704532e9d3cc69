"""The Qt-free core, in rooms by concern (CONTRIBUTING.md, "Where things are"):

- ``calls``: what a tool call does, read once (``reading``), its shell parser (``shellparse``) and
  its risk level (``risk``);
- ``policy``: the person's rules (rules, load, match, suggest, watch);
- ``decisions``: a call's way from asked to decided (``broker``, ``tickets``, their ``verdict``,
  session ``memory``, ``modes``, the waiting ``queue``);
- ``messages``: the protocol's messages (``models``), the validation ladder (``protocol``) and the
  generated JSON Schema (``schema``);
- ``transport``: the socket (``server``, the per-connection ``connection``), ``peercred``,
  ``tokens``, ``limits`` and socket ``activation``;
- ``store``: the ``audit`` log, its ``statistics``, and client text made safe for the app's log
  (``logsafe``);
- ``service``: all of it assembled, for the GUI, tests and benchmarks.

Each module has one name: its path in its room.
"""
