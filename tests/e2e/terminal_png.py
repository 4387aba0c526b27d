"""A terminal screen (``tmux capture-pane -e``) as a PNG: ANSI SGR colours to HTML, shot in headless chromium.

Only what tmux emits is handled: ``ESC[...m`` with reset, bold, italic, underline, reverse,
the 8/16 colours, 256-colour (``38;5;N``) and true colour (``38;2;R;G;B``). Anything else is
dropped. Used by the Neovim-in-tmux test to keep a picture of what the user saw.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][A-Z0-9])")
BASE16 = [
    "#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
]  # fmt: skip
FOREGROUND, BACKGROUND = "#d4d4d4", "#1e1e1e"


def _xterm256(n: int) -> str:
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return f"#{steps[n // 36]:02x}{steps[(n // 6) % 6]:02x}{steps[n % 6]:02x}"
    grey = 8 + 10 * (n - 232)
    return f"#{grey:02x}{grey:02x}{grey:02x}"


class _Style:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.fg: str | None = None
        self.bg: str | None = None
        self.bold = self.italic = self.underline = self.reverse = False

    def apply(self, params: str) -> None:
        codes = [int(p) if p.isdigit() else 0 for p in params.replace(":", ";").split(";")] if params else [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    colour, i = _xterm256(codes[i + 2]), i + 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    colour, i = "#{:02x}{:02x}{:02x}".format(*codes[i + 2 : i + 5]), i + 4
                else:
                    colour = None
                if code == 38:
                    self.fg = colour
                else:
                    self.bg = colour
            else:
                self._simple(code)
            i += 1

    def _simple(self, code: int) -> None:
        flags = {1: ("bold", True), 3: ("italic", True), 4: ("underline", True), 7: ("reverse", True)}
        flags |= {22: ("bold", False), 23: ("italic", False), 24: ("underline", False), 27: ("reverse", False)}
        if code == 0:
            self.reset()
        elif code in flags:
            setattr(self, *flags[code])
        elif 30 <= code <= 37 or 90 <= code <= 97:
            self.fg = BASE16[code - 30 if code < 90 else code - 82]
        elif 40 <= code <= 47 or 100 <= code <= 107:
            self.bg = BASE16[code - 40 if code < 100 else code - 92]
        elif code == 39:
            self.fg = None
        elif code == 49:
            self.bg = None

    def css(self) -> str:
        fg, bg = self.fg or FOREGROUND, self.bg or BACKGROUND
        if self.reverse:
            fg, bg = bg, fg
        parts = [f"color:{fg}", f"background:{bg}"]
        parts += ["font-weight:bold"] * self.bold + ["font-style:italic"] * self.italic
        parts += ["text-decoration:underline"] * self.underline
        return ";".join(parts)


def ansi_to_html(screen: str) -> str:
    """The whole page: one ``<pre>`` with a ``<span style>`` per styled run."""
    style, out = _Style(), []
    for line in screen.split("\n"):
        line = OTHER_ESCAPES.sub("", line)
        pos = 0
        for match in SGR.finditer(line):
            if match.start() > pos:
                out.append(f'<span style="{style.css()}">{html.escape(line[pos : match.start()])}</span>')
            style.apply(match.group(1))
            pos = match.end()
        if pos < len(line):
            out.append(f'<span style="{style.css()}">{html.escape(line[pos:])}</span>')
        out.append("\n")
    body = "".join(out)
    font = "display:inline-block;font-family:'DejaVu Sans Mono',monospace;font-size:13px;line-height:1.25"
    page = f"margin:0;padding:8px;background:{BACKGROUND};color:{FOREGROUND}"
    return f'<!doctype html><meta charset="utf-8"><body style="{page}"><pre style="margin:0;{font}">{body}</pre>'


def screenshot(screen: str, png: Path, chromium: str) -> None:
    """Render ``screen`` (ANSI) to ``png`` with Playwright driving ``chromium``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_content(ansi_to_html(screen))
            page.locator("pre").screenshot(path=str(png))
        finally:
            browser.close()
