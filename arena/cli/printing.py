"""What `arena` prints and where: tables and results on stdout, problems, warnings and
progress on stderr, every text printed as it is (never as rich markup)."""

from __future__ import annotations

import sys
import unicodedata

from rich.console import Console, Group, OverflowMethod, RenderableType
from rich.markup import escape
from rich.table import Column, Table
from rich.text import Text

from results.presentation import views

# Piped into a file or another program, rich would squeeze tables into 80 columns, leaving
# "…" for numbers; a log reads better with whole lines.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)


def out_print(text: str) -> None:
    out.print(text, markup=False, highlight=False, soft_wrap=True)


def err_print(text: str) -> None:
    err.print(text, markup=False, highlight=False, soft_wrap=True)


def error_line(problem: str) -> None:
    """`error: problem` on stderr, the problem printed as it is (never as rich markup)."""
    err.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, markup=True, soft_wrap=True)


def warning(text: str) -> None:
    """`warning: text` on stderr, printed as it is."""
    err_print(f"warning: {text}")


def as_text(text: str) -> str:
    """A model's or a merchant's words as rich shows them: as text, never as markup, and
    without the control characters (terminal escapes among them) a terminal would act on."""
    return escape("".join(c for c in text if c in "\n\t" or unicodedata.category(c) != "Cc"))


def drawn(table: views.TableModel, overflow: OverflowMethod = "fold") -> RenderableType:
    """A table of results.presentation.views drawn by rich: a line between its sections, every
    text as it is (no rich markup), its notes on lines of their own under it. A path or a
    command too long for its column folds onto the next line rather than losing its end; the
    tables of one match's record (`overflow="ellipsis"`) cut such a word short instead."""
    shown = Table(
        *(Column(escape(header.text), no_wrap=header.whole, overflow=overflow) for header in table.headers),
        title=escape(table.title),
    )
    for number, section in enumerate(table.sections):
        if number:
            shown.add_section()
        for row in section:
            shown.add_row(*map(escape, row))
    return Group(shown, *(Text(note) for note in table.notes)) if table.notes else shown
