"""Fill the English plural catalogue (``strata_en.ts``) from the "(s)" convention of the sources.

English is the source language, so the only English catalogue Strata needs holds the numerus
forms: ``tr("%n model(s)", "", n)`` reads "1 model" and "3 models" once this catalogue is
installed. ``pyside6-lupdate -pluralonly`` collects those strings; this script writes both forms
of each, "(s)" removed for one and "s" for many, so nobody translates English by hand.
Run by scripts/update-translations.sh.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def forms(source: str) -> tuple[str, str]:
    """The singular and plural of a "(s)" source string, e.g. "%n model(s)" → "%n model", "%n models"."""
    return re.sub(r"\(s\)", "", source), re.sub(r"\(s\)", "s", source)


def fill(path: Path) -> int:
    tree = ET.parse(path)
    filled = 0
    for message in tree.iter("message"):
        if message.get("numerus") != "yes":
            continue
        source = message.findtext("source") or ""
        translation = message.find("translation")
        if translation is None:
            translation = ET.SubElement(message, "translation")
        for child in list(translation):
            translation.remove(child)
        translation.text = None
        translation.attrib.pop("type", None)
        for text in forms(source):
            ET.SubElement(translation, "numerusform").text = text
        filled += 1
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return filled


if __name__ == "__main__":
    print(f"{fill(Path(sys.argv[1]))} English plural string(s) filled")
