"""Text from a peer made safe for a terminal: :func:`sanitize_for_terminal`.

An agent controls most of what a client shows (reply text, thoughts, tool titles, option
names, paths, terminal output, its stderr). Printed as is, a control character or an escape
sequence in it acts on the user's terminal: OSC 52 writes the clipboard, OSC 0 sets the
window title, CSI 2J clears the screen. Everything such text reaches a terminal through goes
through this function first; ``--json`` output does not need it (JSON escapes controls).
"""

from __future__ import annotations

import re

__all__ = ["sanitize_for_terminal"]

#: any C0 control but tab and newline, DEL, and the C1 controls (U+0080..U+009F)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: the sequences removed whole; what is left of a control is then removed alone
_SEQUENCE = re.compile(
    # CSI (ESC [ or the C1 CSI): parameters, intermediates, one final byte
    "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # OSC, DCS, SOS, PM, APC (7-bit or C1 introducer) up to BEL or ST (ESC \\ or the C1 ST)
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)"
    # any other escape: ESC, intermediates, a final byte (ESC c, ESC 7, ESC ( B, ...)
    "|\x1b[\x20-\x2f]*[\x30-\x7e]"
    # a lone control (an unfinished sequence loses its introducer; its text stays visible)
    "|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def sanitize_for_terminal(text: str) -> str:
    """``text`` without control characters (newline and tab are kept): escape sequences are
    removed whole where recognisable (CSI, OSC with a BEL or ST terminator, DCS, SOS, PM, APC,
    other ESC sequences), lone controls (CR, BS, ESC, C1, ...) are dropped. Text without any
    control character is returned as it is (one scan: cheap enough for every streamed chunk)."""
    if _CONTROL.search(text) is None:
        return text
    return _SEQUENCE.sub("", text)
