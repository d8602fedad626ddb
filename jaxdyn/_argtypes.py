"""Argument types of the command lines: numbers checked while the arguments are parsed, before
anything is loaded or compiled, so that a bad one is answered with one line and exit status 2
(:class:`Parser`)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``prog: error: message``) and exit
    status 2, without the usage block; ``--help`` shows the usage."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def count(minimum: int):
    """An integer of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {v}")
        return v

    parse.__name__ = "integer"
    return parse


def _number(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return v


def positive(text: str) -> float:
    """A finite number > 0."""
    v = _number(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return v


def fraction(text: str) -> float:
    """A number in [0, 1)."""
    v = _number(text)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text!r}")
    return v
