"""`python -m pocketmq.storage demo|inspect ...`: the storage engine's command-line tools."""

from __future__ import annotations

import sys

USAGE = """usage: python -m pocketmq.storage COMMAND ...

commands:
  demo STORE_DIR      write sample messages through DefaultMessageStore (--help for options)
  inspect STORE_DIR   show the commit log, consume queues, index files and checkpoint, read-only
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(USAGE, end="", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "demo":
        from .demo import main as demo_main

        return demo_main(rest)
    if command == "inspect":
        from .inspect import main as inspect_main

        return inspect_main(rest)
    print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr, end="")
    return 2


if __name__ == "__main__":
    sys.exit(main())
