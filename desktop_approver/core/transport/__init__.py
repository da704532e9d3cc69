"""The socket and who is on it: the server (socket file, peer credentials, the read loop), the
per-connection protocol object, tokens for forwarded sockets, resource limits and socket activation.
"""
