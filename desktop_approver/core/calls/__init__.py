"""What a tool call does, read once: the reading (tool and argument names, paths, programs), the shell
parser under it, and the risk level read from it. Standard library only.
"""
