"""How risky is a tool call? ``safe``, ``moderate`` or ``destructive``, with short human reasons.

The badge in the dialog, the tray and notifications comes from here, and so does what the
approve-all mode and session memory may answer (never a destructive call) and the
``risk = [...]`` field of policy rules. Calls are read by :mod:`.reading` (one reading for every
consumer); shell commands are parsed, never grepped: ``echo "rm -rf /"`` is safe,
``sudo bash -c 'rm -rf ~'`` is not.

The three levels:

- **safe**: reads or lists anything that is not a secret's content (anywhere on the machine),
  sends nothing, changes nothing; dry runs of anything (``rsync -n``, ``git push --dry-run``).
- **moderate**: changes inside the working directory that can be undone or regenerated (edits,
  commits, builds, deleting single files), scratch files in the system temp directory, network
  reads, installs into a project environment, inline code that only computes, and any tool
  whose effect is not known but shows nothing dangerous.
- **destructive**: irreversible loss (also inside the repository: ``git reset --hard``,
  ``git clean -x``, any recursive delete but a tool's cache), any other write or delete outside
  the working directory, effects outside the machine (pushes and other remote-repository
  writes, merges, HTTP DELETE, webhooks, e-mail, chat and comments to other people, database
  writes not in a file of the working directory, deploys), privilege escalation, publishing,
  secrets leaving
  the machine or read into the agent's context (private keys, cloud credentials, tokens),
  persistence (startup files, git settings that run programs, cron, systemd units), and
  everything whose effect cannot be seen through: a program named by a variable, ``eval`` of
  decoded or downloaded text, a script piped into a shell, inline interpreter code that
  deletes, spawns or sends, reverse shells, hidden characters where a shell reads code.

``~`` and ``$HOME`` are the home directory of the app, which is the agent's (the peer is the
same user). Hints from the agent (MCP ``readOnlyHint``, ``destructiveHint``, ...) can raise the
level and are reported in ``hint_notes``, but they never lower it.

Beside the level, every verdict says whether the call was **understood** (issue 19): every
program, option, ``NAME=value`` prefix, path, tool and argument was found in the catalog
(:mod:`..catalog`, data). Only an understood call at safe or moderate may be answered without the
person; ``gaps`` names what was not understood, and :attr:`RiskAssessment.shown` is what the person's
badge says (``"not understood"`` rather than a guessed level). Each program of a command line is
read once by its grammar (:mod:`..grammar`, issue 30), and every judgement below reads that parse.
The package, by concern: :mod:`.findings` (levels and the verdict), :mod:`.places` (what a path
is), :mod:`.addresses` (whether an address is this machine's), :mod:`.hidden` (characters that
hide code), :mod:`.forms` (dry-run and read-only forms of a command line, from its parse),
:mod:`.inline` (one-liners that only import and print), :mod:`.programs`
(shell command lines), :mod:`.tools` (other tools), :mod:`.roles` (each argument's role, a role
given twice, values no reader reads), :mod:`.understanding` (the engine over the catalog),
:mod:`.unread` (destructive findings in values no reader reads) and :mod:`.assessment` (the cached
entry points, which give the engine the programs reader's judge of inner command lines).
"""

from __future__ import annotations

from .assessment import _assess as _assess  # the uncached reading, for tests/bench/run_bench.py
from .assessment import assess, assess_command, assess_reading
from .findings import DESTRUCTIVE, LEVELS, MODERATE, SAFE, RiskAssessment, max_level

__all__ = ["DESTRUCTIVE", "LEVELS", "MODERATE", "SAFE", "RiskAssessment", "assess", "assess_command", "assess_reading",
           "max_level"]
