"""Drives Open WebUI in Debian's chromium (headless, Playwright) against `strata serve`: list the
models, chat with a streamed reply, pull a model from the hub, delete it. Run by scripts/frontend-check
with Open WebUI's own Python (Playwright is installed there); prints one line per step and writes a
screenshot per step.

Usage: python frontend_driver.py WEBUI_URL STRATA_URL PULL_NAME SHOT_DIR
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
# The closed network here: no background connections, no QUIC, a fresh profile (machine notes).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def step(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def strata_models(strata: str) -> list[str]:
    with urllib.request.urlopen(strata + "/api/tags", timeout=30) as r:
        return [m["name"] for m in json.load(r)["models"]]


def list_models(page: Page, webui: str, strata: str, shots: Path) -> str:
    page.goto(webui + "/", wait_until="load")
    selector = page.locator("button[aria-label^='Selected model']")
    selector.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    lets_go = page.get_by_text("Okay, Let's Go!")  # the release notes, on a first visit only
    if lets_go.is_visible():
        lets_go.click()
    selector.click()
    search = page.get_by_placeholder("Search a model")
    search.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(shots / "1-models-listed.png"))
    served = strata_models(strata)
    shown = [m for m in served if page.get_by_text(m, exact=True).count() >= 1]
    page.keyboard.press("Escape")
    step(f"models Strata serves: {served}; shown in Open WebUI's model menu: {shown}")
    if not served or shown != served:
        raise SystemExit("FAIL: Open WebUI does not list Strata's models")
    return shown[0]


def chat(page: Page, shots: Path) -> None:
    box = page.locator("#chat-input")
    box.click()
    box.type("Tell me about lighthouses.")
    page.keyboard.press("Enter")
    reply = page.locator("#response-content-container").last
    reply.wait_for(timeout=120_000)
    lengths: list[int] = []
    stable_since = time.monotonic()
    while time.monotonic() - stable_since < 3.0:
        n = len(reply.inner_text())
        if not lengths or n != lengths[-1]:
            lengths.append(n)
            stable_since = time.monotonic()
            if len(lengths) == 3:
                page.screenshot(path=str(shots / "2-chat-streaming.png"))
        page.wait_for_timeout(50)
    page.screenshot(path=str(shots / "3-chat-done.png"))
    step(f"chat reply streamed: the page showed {len(lengths)} growing lengths of the reply "
         f"({', '.join(map(str, lengths[:8]))}{' ...' if len(lengths) > 8 else ''}; {lengths[-1]} characters)")
    if len(lengths) < 2:
        raise SystemExit("FAIL: the reply did not arrive in pieces")


def open_manager(page: Page, webui: str) -> None:
    page.goto(webui + "/admin/settings/models", wait_until="load")
    page.get_by_role("button", name="Actions").click()
    page.locator("[role=menu]").get_by_text("Manage", exact=True).click()
    page.get_by_placeholder("Enter model tag (e.g. mistral:7b)").wait_for(timeout=30_000)


def pull(page: Page, webui: str, strata: str, name: str, shots: Path) -> str:
    open_manager(page, webui)
    field = page.get_by_placeholder("Enter model tag (e.g. mistral:7b)")
    field.fill(name)
    field.locator("xpath=following::button[1]").click()
    deadline = time.monotonic() + 300
    before = set(strata_models(strata))
    while time.monotonic() < deadline:
        new = [m for m in strata_models(strata) if m not in before]
        toast = page.get_by_text("successfully downloaded")
        if new and toast.count():
            page.screenshot(path=str(shots / "4-pulled.png"))
            step(f"pulled {name} through Open WebUI: Strata now lists {new[0]}; Open WebUI said "
                 f"'{toast.first.inner_text()}'")
            return new[0]
        page.wait_for_timeout(250)
    page.screenshot(path=str(shots / "4-pull-failed.png"))
    raise SystemExit(f"FAIL: {name} was not pulled within 5 minutes")


def delete(page: Page, webui: str, strata: str, model: str, shots: Path) -> None:
    open_manager(page, webui)
    select = page.locator("select").filter(has_text="Select a model")
    option = select.locator("option").filter(has_text=model).first
    select.select_option(value=option.get_attribute("value"))
    page.get_by_role("button", name="Delete Model").click()
    confirm = page.get_by_role("button", name="Confirm")
    if confirm.count():
        confirm.click()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if model not in strata_models(strata):
            page.wait_for_timeout(500)
            page.screenshot(path=str(shots / "5-deleted.png"))
            step(f"deleted {model} through Open WebUI: Strata lists {strata_models(strata)}")
            return
        page.wait_for_timeout(250)
    raise SystemExit(f"FAIL: {model} was not deleted")


def main() -> None:
    webui, strata, pull_name, shot_dir = sys.argv[1:5]
    shots = Path(shot_dir)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        step(f"chromium {browser.version} (headless) opens Open WebUI at {webui}")
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(60_000)
        try:
            list_models(page, webui, strata, shots)
            chat(page, shots)
            model = pull(page, webui, strata, pull_name, shots)
            delete(page, webui, strata, model, shots)
        except Exception:
            page.screenshot(path=str(shots / "failed.png"))
            raise
        finally:
            browser.close()
    step("PASS: Open WebUI listed, chatted (streamed), pulled and deleted through Strata")


if __name__ == "__main__":
    main()
