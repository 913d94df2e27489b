"""Chinese, Japanese and Korean text in a report or a viewer page: where the system lacks a CJK font it
shows as boxes, so the page names the font to install.
"""

from __future__ import annotations

import re

# Han, kana and hangul: text that shows as boxes on a system without a CJK font.
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


_CJK_MARK = "<!--bqas:cjk-note-->"


CJK_NOTE = (
    '<p class="notice cjk-note">This report contains Chinese, Japanese or Korean text. Where it shows as '
    "boxes, the system lacks a CJK font: install Noto Sans CJK SC (Debian/Ubuntu: fonts-noto-cjk) or "
    "Source Han Sans SC; the report names them first in its font list.</p>"
)


def cjk_note(html: str) -> str:
    """Put the missing-font note at the template's mark when the report holds CJK text (record texts
    are escaped, so no record can contain the mark itself)."""
    return html.replace(_CJK_MARK, CJK_NOTE if CJK_RE.search(html) else "", 1)
