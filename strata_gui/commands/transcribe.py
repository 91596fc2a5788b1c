"""`strata transcribe FILE [--model M] [--language L] [--engine DIR] [--json]`: speech to text.

The speech engine (whisper.cpp's whisper-server) comes from the core's resolver, as in the chat's
microphone; the model is ``--model``, else Settings' speech model, else the library's first whisper
model. A long WAV is sent in pieces with progress on stderr; Ctrl-C stops after the current piece.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from strata_gui.core.app_services import AppServices
from strata_gui.core.base import Progress, SpeechError
from strata_gui.core.platform import NotRegularFileError, check_regular
from strata_gui.core.runtime import SPEECH
from strata_gui.core.speech import spoken_language


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("transcribe", help="write down what is said in an audio file (whisper.cpp)")
    p.add_argument("file", type=Path, help="the recording (WAV, MP3 or FLAC)")
    p.add_argument("--model", "-m", type=Path, help="whisper model (ggml-*.bin; default: Settings', else the library's first)")
    p.add_argument("--language", "-l", default="",
                   help="language spoken, e.g. en, de, zh; 'auto' detects it (default: Settings', else auto)")
    p.add_argument("--engine", "-e", action="append", default=[], metavar="DIR", type=_folder,
                   help="use the whisper-server in DIR first (installed engines stay as fallbacks)")
    p.add_argument("--json", action="store_true", help="print one JSON object (text, engine, timings)")
    p.set_defaults(func=run)


def _folder(text: str) -> Path:
    return Path(text).expanduser()


def _existing(path: Path, what: str) -> Path:
    path = path.expanduser()
    try:
        check_regular(path)  # a FIFO would make the engine (or the reader) wait forever
    except NotRegularFileError as exc:
        raise SpeechError(f"The {what} {path} cannot be used: {exc.message}", hint=exc.hint) from exc
    except OSError as exc:
        raise SpeechError(f"The {what} {path} does not exist.") from exc
    return path


async def run(args: argparse.Namespace, app: AppServices) -> int:
    audio = _existing(args.file, "audio file")
    await app.prepare()
    for folder in args.engine:
        await app.resolver.use_folder(folder, kind=SPEECH)
    model = _existing(args.model, "model file") if args.model else await app.speech_model()
    resolution = app.resolver.resolve(model, kind=SPEECH)
    if resolution.chosen is None:
        raise SpeechError(resolution.summary().replace("engine", "speech engine", 1),
                          hint="Register one with `strata engines add-local DIR --kind speech`, or pass --engine DIR.")
    language = spoken_language(args.language or app.settings.current.speech_language, "")
    if not args.json:
        print(f"engine: {resolution.summary()}", file=sys.stderr)

    def show(p: Progress) -> None:
        if not args.json:
            print(p.message, file=sys.stderr, flush=True)

    transcript = await app.speech.transcribe(model, audio, language=language, on_progress=show)
    for notice in transcript.notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.json:
        print(json.dumps({**transcript.to_json(), "model": str(model), "file": str(audio)}, indent=2))
    else:
        print(transcript.text)
        heard = f" of {transcript.audio_seconds:.1f} s audio" if transcript.audio_seconds else ""
        print(f"transcribed{heard} in {transcript.seconds:.1f} s on {transcript.engine}", file=sys.stderr)
    return 0
