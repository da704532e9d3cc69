"""What a tool call does, read once: the reading (tool and argument names, paths, programs), the shell
parser under it, the catalog of known programs and tools (data), and the risk level and
understanding read from them. Standard library only.
"""
