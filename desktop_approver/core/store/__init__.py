"""What the app keeps: the append-only audit log, the statistics read from it, and client text made
harmless for the app's own log.
"""
