#!/usr/bin/env python
import os
import sys

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except KeyboardInterrupt:
        # Ctrl-C (make run's migrate or collectstatic, any command): one line, not a
        # traceback. A migration is undone by its transaction; the next run does it again.
        command = sys.argv[1] if len(sys.argv) > 1 else "manage.py"
        print(f"\n{command} interrupted.", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
