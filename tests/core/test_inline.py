"""Inline programs that only import and print (``python -c``, ``node -e``): read, or said why not."""

from __future__ import annotations

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.calls.risk.inline import only_prints


@pytest.mark.parametrize(("language", "code"), [
    ("python3", "print(1+1)"),
    ("python3", "import sys; print(sys.version)"),
    ("python3", "import json; print(json.dumps({'a': 1}))"),
    ("python3", "import platform; print(platform.platform())"),
    ("python3", "import sys; print(sys.version_info.major)"),
    ("python3", "from datetime import datetime; print(datetime.now())"),
    ("python3", "import importlib.metadata; print(importlib.metadata.version('pip'))"),
    ("python3", "print(f'{2**10}')"),
    ("node", "console.log(process.version)"),
    ("node", "console.log(1 + 2)"),
    ("node", "JSON.stringify(process.versions)"),
])
def test_a_program_that_only_imports_and_prints_is_read(language: str, code: str) -> None:
    assert only_prints(language, code) is None


@pytest.mark.parametrize(("language", "code", "why"), [
    ("python3", "import os; print(os.environ)", "an import of `os`"),
    ("python3", "print(open('/home/me/.ssh/id_rsa').read())", "a call of what a call returned"),
    ("python3", "import sys; print(sys.modules)", "the attribute `modules`"),
    ("python3", "print(type(1).__subclasses__())", "a call of what a call returned"),
    ("python3", "__import__('os').system('x')", "a statement other than an import or a print"),
    ("python3", "import sys; sys.stdout.write('x')", "a statement other than an import or a print"),
    ("python3", "print(eval('1'))", "the name `eval`"),
    ("python3", "print(", "code that does not parse"),
    ("python3", "print(1)\n" * 100, "a longer program"),
    ("node", "console.log(require('fs').readFileSync('/etc/passwd'))", "the name `require`"),
    ("node", "console.log(String['constructor'])", "code that is not one print of listed values"),
    ("node", "console.log('a'.constructor.constructor('x')())", "code that is not one print of listed values"),
    ("node", "console.log(`${process.env.HOME}`)", "code that is not one print of listed values"),
    ("node", "process.env", "the name `process.env`"),
    ("ruby", "puts 1", "ruby code"),
])
def test_anything_else_is_not_understood_and_says_why(language: str, code: str, why: str) -> None:
    assert only_prints(language, code) == why


def test_the_call_is_understood_at_moderate_and_its_words_after_the_code_are_its_own() -> None:
    for command in ('python3 -c "import sys; print(sys.version)"', 'python3 -W ignore -c "print(2)" a b',
                    "node -e 'console.log(process.version)'"):
        found = assess("Bash", {"command": command}, cwd="/home/me/project")
        assert found.understood and found.level == "moderate", (command, found)
    found = assess("Bash", {"command": 'python3 -c "import os; os.system(\'id\')"'}, cwd="/home/me/project")
    assert not found.understood and "the code given to `python3 -c` (an import of `os`)" in found.gaps
