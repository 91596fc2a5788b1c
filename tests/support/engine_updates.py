"""Engine builds for the update tests: the real CPU llama-server, published as new releases, some
behind a small start script that behaves as a broken release does (see tests/engines/test_updates.py)."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.engines.conftest import UPSTREAM, _zip_add, pack_cpu_zip
from tests.support import gguf_model
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer

CURRENT, NEW = "upstream-cpu-all-b7601", "upstream-cpu-all-b7700"

_START = '#!/bin/sh\nhere=$(dirname "$0")\n'
_END = 'exec "$here/llama-server-real" "$@"\n'
# Once a model loads: 4-token batches (a build with starved defaults). Not one thread: on this
# shared 2-core machine two threads are not reliably faster than one, 4-token batches always slower.
SLOW = _START + 'case " $* " in *" -m "*) exec "$here/llama-server-real" "$@" -ub 4 -b 4;; esac\n' + _END
# Crashes while loading any model; --version and --list-devices still answer (the probe passes).
CRASH = _START + ('case " $* " in *" -m "*) echo "llama_model_load: loading model tensors" >&2; '
                  'kill -SEGV $$;; esac\n') + _END
# Loads the trial's model, but not the other one.
BREAKS_OTHER = _START + ('case "$*" in *strata-other-model*) echo "llama_model_load: error loading model: '
                         'unknown model architecture" >&2; exit 1;; esac\n') + _END

# Loads and answers, but its chat template breaks on any request with tools (as a build whose
# tool-call support regressed): the benchmark passes, the format check does not.
BREAKS_TOOLS = _START + ('case " $* " in *" -m "*) exec "$here/llama-server-real" "$@" '
                         '--chat-template-file "$here/chat-template.jinja";; esac\n') + _END
TOOLS_BROKEN_TEMPLATE = ("{% if tools %}{{ raise_exception('tool calls are broken in this build') }}{% endif %}"
                         + gguf_model.CHATML_TEMPLATE)


def pack_wrapper_zip(real: Path, out: Path, script: str, extra: dict[str, str] | None = None) -> Path:
    """A CPU release whose ``llama-server`` is ``script`` in front of the real binary (``extra``:
    more files beside it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as zf:
        _zip_add(zf, "build/bin/llama-server", script.encode(), 0o755)
        _zip_add(zf, "build/bin/llama-server-real", real.read_bytes(), 0o755)
        for name, text in (extra or {}).items():
            _zip_add(zf, f"build/bin/{name}", text.encode())
    return out


@dataclass(frozen=True)
class Builds:
    real: Path
    slow: Path
    crash: Path
    breaks_other: Path
    breaks_tools: Path


def make_builds(d: Path, test_engines: TestEngines) -> Builds:
    """The four builds, packed once into ``d``."""
    name = "llama-b7700-bin-ubuntu-x64.zip"  # publish() names it after the tag it is released as
    return Builds(pack_cpu_zip(test_engines.cpu_server, d / name),
                  pack_wrapper_zip(test_engines.cpu_server, d / "slow" / name, SLOW),
                  pack_wrapper_zip(test_engines.cpu_server, d / "crash" / name, CRASH),
                  pack_wrapper_zip(test_engines.cpu_server, d / "breaks" / name, BREAKS_OTHER),
                  pack_wrapper_zip(test_engines.cpu_server, d / "tools" / name, BREAKS_TOOLS,
                                   {"chat-template.jinja": TOOLS_BROKEN_TEMPLATE}))


def make_models(d: Path, test_engines: TestEngines) -> tuple[Path, Path]:
    """The model the trials use, and a second one."""
    return (gguf_model.write_model(d / "strata-trial-model.gguf"),
            gguf_model.write_model(d / "strata-other-model.gguf", gguf_model.ModelSpec(seed=7)))


def publish(github: GitHubServer, tag: str, archive: Path, tmp_path: Path, when: str, *,
            name: str | None = None) -> None:
    """Publish ``archive`` as ``tag`` (renamed to that tag's asset name), titled ``name`` (default:
    the tag)."""
    target = tmp_path / "published" / tag / f"llama-{tag}-bin-ubuntu-x64.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(archive.read_bytes())
    github.add_release(UPSTREAM, tag, [target], published_at=when, name=name)


def hangs_loading(marker: Path) -> str:
    """A start script that, asked to load a model, appends a line to ``marker`` and then waits
    (as a load that takes long does), so a test can stop an update while its trial runs."""
    return _START + (f'case " $* " in *" -m "*) echo loading >> "{marker}"; exec sleep 120;; esac\n') + _END
