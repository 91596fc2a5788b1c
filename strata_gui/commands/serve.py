"""`strata serve`: every library model for other apps (OpenAI, Ollama and Anthropic APIs), loaded on
demand by the engine pool, without a window, until Ctrl+C."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from strata_gui.commands import arg_types, load_options
from strata_gui.commands.device_option import add_device_option, apply_device_option
from strata_gui.core.app_services import AppServices
from strata_gui.core.serve import ApiRequest, BackgroundServer, serve_command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="serve the model library to other apps (OpenAI, Ollama and Anthropic APIs)")
    p.add_argument("--model", "-m", action="append", default=[], metavar="FILE",
                   help="also serve this file (repeat for more; the library is always served)")
    p.add_argument("--engine", "-e", action="append", default=[], metavar="DIR",
                   help="engine folder (repeat for a fallback order; default: the installed engines)")
    p.add_argument("--port", type=arg_types.PORT, default=None, help="TCP port (default: from Settings, 8765)")
    p.add_argument("--lan", action="store_true",
                   help="listen on every network interface (requires an API key; see --new-key)")
    p.add_argument("--no-model-routes", action="store_true",
                   help="refuse /api/pull, /api/copy and /api/delete for this run (Settings turns them off for good)")
    p.add_argument("--log-requests", metavar="FILE", type=Path,
                   help="append each request to FILE as one JSON line (client, API, model, status, tokens, times)")
    p.add_argument("--new-key", action="store_true", help="generate a new API key, print it once and exit")
    p.add_argument("--show-key", action="store_true", help="print the current API key and exit")
    add_device_option(p)
    p.add_argument("--preload", action="store_true", help="load the --model files before the first request")
    load_options.add_arguments(p)
    p.add_argument("--max-requests", type=int, default=0, help=argparse.SUPPRESS)  # tests: exit after N
    p.set_defaults(func=run)


def _describe(req: ApiRequest) -> str:
    parts = [f"{req.status} {req.path}"]
    if req.prompt_tokens is not None:
        parts.append(f"prompt {req.prompt_tokens} tok")
    if req.output_tokens is not None:
        parts.append(f"{req.output_tokens} tok out")
    if req.decode_tps:
        parts.append(f"{req.decode_tps:.1f} tok/s")
    if req.ttft_s is not None:
        parts.append(f"TTFT {req.ttft_s * 1000:.0f} ms")
    return " · ".join(parts)


def _paths(given: list[str]) -> list[Path]:
    return [Path(f).expanduser() for f in given]


async def _choose(app: AppServices, args: argparse.Namespace) -> list[Path]:
    """Resolve the engines (one-off folders first, checked) and add the named models to the library."""
    apply_device_option(args, app)
    await app.prepare()
    for folder in _paths(args.engine):
        await app.resolver.use_folder(folder)
    models = _paths(args.model)
    for model in models:
        entry = await app.models.open_file(model)
        if entry.broken:
            print(f"warning: {model}: {entry.error}", file=sys.stderr, flush=True)
    return models


async def run(args: argparse.Namespace, app: AppServices) -> int:
    serve = app.serve
    if args.new_key:
        print(f"new API key (shown once; clients send it as 'Authorization: Bearer KEY'):\n{serve.generate_key()}")
        return 0
    if args.show_key:
        print(serve.api_key() or "no API key set (generate one with --new-key)")
        return 0
    load_options.apply(args, app)
    if args.no_model_routes and serve.admin is not None:
        serve.admin.off_for_this_run = True
    if args.log_requests is not None:
        serve.activity.log_to(args.log_requests.expanduser())
    models = await _choose(app, args)
    for model in models:
        await load_options.check(app, model)
    done = asyncio.Event()
    served = [0]

    def on_request(req: ApiRequest) -> None:
        print(_describe(req), flush=True)
        served[0] += 1
        if args.max_requests and served[0] >= args.max_requests:
            done.set()

    serve.requests.subscribe(on_request)
    url = await serve.start(lan=args.lan or None, port=args.port)
    names = [m.id for m in serve.router.models()]
    print(f"serving {len(names)} model{'s' if len(names) != 1 else ''} at {url}: "
          + (", ".join(names) if names else "none yet (download one: strata models pull, or pass --model)"),
          flush=True)
    print(f"OpenAI clients: {url} · Ollama and Anthropic clients: {url.removesuffix('/v1')}", flush=True)
    if serve.has_key:
        print("API key required (see --show-key)", flush=True)
    print(serve.curl_example(), flush=True)
    if args.preload:
        for model in models:
            name = next((m.id for m in serve.router.models() if m.path == model), None)
            if name is not None:
                async with serve.router.borrow(name):
                    print(f"{name} loaded", flush=True)
    background = await _answer_the_app(args, app, done)
    print("press Ctrl+C to stop", file=sys.stderr, flush=True)
    try:
        await done.wait()
    except asyncio.CancelledError:  # Ctrl+C: the core stops the server and every engine on the way out
        print("stopping: unloading the models", file=sys.stderr, flush=True)
        raise
    finally:
        serve.activity.close_log()
        if background is not None:
            if background.handed_over:
                print("the Strata app serves in this server's place now: unloading the models and stopping",
                      file=sys.stderr, flush=True)
                await serve.stop()  # the port first, then the models (app_services.aclose), then the lock
                await app.aclose()
            await background.aclose()
    return 0


async def _answer_the_app(args: argparse.Namespace, app: AppServices, done: asyncio.Event) -> BackgroundServer | None:
    """Let the app take this server's place (one engine pool per machine, see core/serve/handover.py).
    Only a server of the plain library agrees: one started with its own models, engines, devices or
    load options is left alone."""
    if args.max_requests:  # a test's server with a fixed end
        return None
    plain = not (args.model or args.engine or args.device or args.log_requests or load_options.given(args))
    relaunch = [*serve_command(), *(["--port", str(args.port)] if args.port is not None else []),
                *(["--lan"] if args.lan else []), *(["--no-model-routes"] if args.no_model_routes else [])]
    background = BackgroundServer(app.base.paths, port=app.serve.port, lan=bool(args.lan or app.serve.settings.serve_lan),
                                  relaunch=relaunch, plain=plain, on_hand_over=done.set)
    return background if await background.start() else None
