"""Running the command line in-process, as a test sees it."""

from torchpulse.cli import main


def exit_code(argv: list[str]) -> int:
    """main()'s exit code, whether it returns it or argparse raises SystemExit."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code
