"""A call's way from asked to decided: the broker (triage, then ask), the tickets a decider sees,
session memory, the global modes and the one order in which waiting tickets are shown.
"""
