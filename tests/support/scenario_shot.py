"""A lived-in screenshot: the real app with the CPU engine registered, a model chosen and a
conversation held, shown on an X display (Xvfb). Saves the Chat and Dashboard pages.

``python -m tests.support.scenario_shot OUT_DIR MODEL.gguf ENGINE_DIR [theme]``
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


def main() -> int:
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from strata_gui.app import UiHooks, apply_theme, compose
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.config.services import build_services
    from strata_gui.core.runtime.client import SamplingParams
    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.event_loop import new_event_loop

    out, model, engine_dir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    theme = sys.argv[4] if len(sys.argv) > 4 else "light"
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([sys.argv[0]])
    app.setQuitOnLastWindowClosed(False)
    apply_theme(app, theme)
    loop = new_event_loop(app)
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, app, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                    choose_model=lambda: None, save_path=lambda _n: None))
    window = ui.window
    pages = ui.pages
    window.resize(1280, 800)
    window.move(0, 0)
    window.show()

    def shoot(name: str) -> None:
        geo = window.frameGeometry()
        QGuiApplication.primaryScreen().grabWindow(0, 0, 0, geo.width(), geo.height()).save(
            str(out / f"scenario-{name}-{theme}.png"))
        print(out / f"scenario-{name}-{theme}.png", flush=True)

    async def scenario() -> None:
        await services.engines.add_local(engine_dir, "cpu")
        pages.chat.set_model(model)
        conv = pages.chat.new_conversation()
        services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=160, seed=5))
        for text in ("Write a haiku about GPUs.", "Now explain prefill and decode in one sentence each."):
            handle = pages.chat.send_text(text)
            assert handle is not None
            await handle.wait()
        await asyncio.sleep(0.8)
        shoot("chat")
        window.show_page(pages.dashboard)
        await asyncio.sleep(1.5)
        shoot("dashboard")
        window.show_page(pages.engines)
        await asyncio.sleep(1.0)
        shoot("engines")
        # Close the window last: closing it quits the app's loop (lastWindowClosed).
        await bridge.shutdown()
        await services.aclose()
        window.close()

    with loop:
        loop.run_until_complete(scenario())
    return 0


if __name__ == "__main__":
    sys.exit(main())
