"""Requests over NATS JetStream: agents on other machines, and more than one approver.

The same protocol as the local socket (``ipc/PROTOCOL.md``), carried by an existing messaging
engine instead of a home-made network server:

- an agent's :class:`~desktop_approver.relay.agent.RelayTransport` (picked by the clients for a
  ``nats://`` or ``tls://`` URL) publishes each request to the JetStream stream ``APPROVER_REQUESTS``
  on its own subject, ``approver.req.<nats user>.<agent>``, and reads the answer from the key-value
  bucket ``approver_decisions`` under ``<nats user>.<request id>``;
- an approver's :class:`~desktop_approver.relay.approver.RelayApprover` (``tray --relay``) reads
  the stream through its own durable consumer, puts each request through the app's own ladder and
  broker (policy, modes, session memory, audit log, the person), and writes the answer with a
  create-only put: exactly one decision exists, whoever sends it.

Where things are named and encoded: :mod:`.names`; how to reach the server: :mod:`.address`.
Needs the ``relay`` extra (``nats-py``); nothing here is imported unless a NATS URL is used.
"""
