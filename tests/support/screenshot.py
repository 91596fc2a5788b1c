"""Shows the real main window on an X display and saves a screenshot of every page.

Run as ``python -m tests.support.screenshot OUT_DIR [THEME [LANGUAGE]]`` with ``DISPLAY`` set (Xvfb) and
``QT_QPA_PLATFORM=xcb``. Prints one JSON line: {"pages": [...], "files": [...]}.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path


def main() -> int:
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from strata_gui.app import UiHooks, apply_theme, compose
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.config.services import build_services
    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.event_loop import new_event_loop
    from strata_gui.ui.i18n import install_language

    out = Path(sys.argv[1])
    theme = sys.argv[2] if len(sys.argv) > 2 else "light"
    language = sys.argv[3] if len(sys.argv) > 3 else "en"
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([sys.argv[0]])
    apply_theme(app, theme)
    install_language(app, language)
    loop = new_event_loop(app)
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, app, UiHooks(open_path=lambda p: None, choose_folder=lambda: None,
                                                    choose_model=lambda: None, save_path=lambda _n: None))
    window = ui.window
    window.resize(1180, 760)
    window.move(0, 0)
    window.show()
    files: list[str] = []

    async def shoot() -> None:
        await asyncio.sleep(0.5)
        for i, title in enumerate(window.page_titles()):
            window.show_page_index(i)
            await asyncio.sleep(0.6)
            screen = QGuiApplication.primaryScreen()
            pix = screen.grabWindow(0, 0, 0, window.frameGeometry().width(), window.frameGeometry().height())
            stem = title.lower().replace(' ', '-') if language == "en" else \
                f"{type(window.pages[i]).__name__.removesuffix('Page').lower()}-{language}"
            name = out / f"{i:02d}-{stem}-{theme}.png"
            pix.save(str(name))
            files.append(str(name))
        # Close the window last: closing it quits the app's loop (lastWindowClosed).
        await bridge.shutdown()
        await services.aclose()
        window.close()

    with loop:
        loop.run_until_complete(shoot())
    print(json.dumps({"pages": window.page_titles(), "files": files}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
