"""Set-of-marks: the screenshot with a box and its bid drawn on every element an agent may act on.

A vision model reads the marks to name elements by bid, as the CTM-AI paper's screenshot processor did. The
page itself is never drawn on: the marks are painted on a copy of the screenshot with Pillow.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

from noosphere.envs.web_page import Element

COLOURS = ("#e11d48", "#2563eb", "#16a34a", "#d97706", "#7c3aed", "#0891b2")


def set_of_marks(screenshot: bytes, elements: Iterable[Element]) -> bytes:
    """A PNG of `screenshot` with each element's box and bid label; elements without a box are left out."""
    from PIL import Image, ImageDraw

    image = Image.open(io.BytesIO(screenshot)).convert("RGB")
    draw = ImageDraw.Draw(image)
    for index, element in enumerate(e for e in elements if e.box is not None):
        assert element.box is not None
        colour = COLOURS[index % len(COLOURS)]
        box = element.box
        draw.rectangle((box.x, box.y, box.x + box.width, box.y + box.height), outline=colour, width=1)
        left, top, right, bottom = draw.textbbox((box.x, box.y), element.bid)
        label_top = max(0.0, box.y - (bottom - top) - 2)
        draw.rectangle((box.x, label_top, box.x + (right - left) + 3, label_top + (bottom - top) + 2), fill=colour)
        draw.text((box.x + 1.5, label_top - (top - box.y) + 1), element.bid, fill="white")
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()
