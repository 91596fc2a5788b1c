"""Compiled dataclass methods kept between runs, so start-up does not compile them again.

Every ``@dataclass`` writes the source of its ``__init__``, ``__repr__``, ``__eq__`` (and for a
frozen one ``__setattr__``/``__delattr__``/``__hash__``) as text and compiles it with ``exec``
when its module is imported. Strata's start-up creates ~150 dataclasses (the app's window and
core, the CLI's chat): compiling their ~770 methods took ~115 ms of a ~600 ms launch on this
project's 2-core machine (bench/coldstart.py), more than the compiled modules themselves.

:class:`ClassCodeCache` keeps the compiled code objects in one file under Strata's cache folder,
keyed by a hash of the exact source text, and gives them back to ``dataclasses`` instead of
compiling: the text is still built from the class each time, so a changed class (another field,
another default, another Python) has another key and is compiled as before. What runs is the code
``exec`` would have compiled from the same text; nothing else about the class changes.

The cache is an optimisation only: a missing, damaged (its digest tells) or foreign file is ignored (and replaced when
the run compiled something new), a folder that cannot be written to costs nothing but the speed.
It trusts its file as Python trusts its own ``__pycache__`` (code it runs): it lives in the user's
cache folder, which only the user can write to.

Only the ``strata`` entry point installs it, for the life of one command (see ``cli.main``), or
until the app's window is usable; a program that imports Strata's modules gets the standard library
untouched.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

log = logging.getLogger(__name__)

# The file starts with this and the interpreter's exact version: marshalled code objects are only
# valid for the Python that wrote them. Then a BLAKE2 digest of the rest: ``marshal`` does not check
# its input, and one flipped bit in a code object made it raise SystemError or crash the
# interpreter (a damaged disk or an interrupted copy would stop every start of Strata).
HEADER = b"strata-dataclass-code 2\n" + sys.hexversion.to_bytes(4, "big")
DIGEST_SIZE = 16
# When the file would hold more than this many methods (classes changed over many updates), it is
# written with this run's methods only.
MAX_ENTRIES = 5000


def cache_file(cache_dir: Path) -> Path:
    """Where the compiled methods for this interpreter are kept."""
    return cache_dir / f"dataclass-code-{sys.implementation.cache_tag}.bin"


def _key(source: str) -> bytes:
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _digest(payload: bytes | memoryview) -> bytes:
    return hashlib.blake2b(payload, digest_size=DIGEST_SIZE, person=b"strata-code").digest()


def sealed(payload: bytes) -> bytes:
    """The file's bytes for a marshalled ``payload``: the header, its digest, the payload."""
    return HEADER + _digest(payload) + payload


class ClassCodeCache:
    """Compiled dataclass methods, read from ``file`` and written back when a run compiled new ones.

    Use :meth:`install` before the modules that define the dataclasses are imported and
    :meth:`close` when the command ends (it writes the file and puts ``exec`` back).
    """

    def __init__(self, file: Path) -> None:
        self.file = file
        self._codes: dict[bytes, CodeType] = {}
        self._used: set[bytes] = set()
        self.compiled = 0  # methods compiled in this run (not found in the file)
        self.reused = 0  # methods taken from the file
        self._installed = False
        self._unsaved = False  # compiled something the file does not hold

    def load(self) -> None:
        """Read the file; anything unreadable or written by another Python is ignored."""
        try:
            data = self.file.read_bytes()  # one read: marshal.load on a file object reads byte-wise
        except OSError:
            return
        if not data.startswith(HEADER):
            log.debug("ignoring %s: written by another version", self.file)
            return
        view = memoryview(data)
        digest, payload = view[len(HEADER):len(HEADER) + DIGEST_SIZE], view[len(HEADER) + DIGEST_SIZE:]
        if _digest(payload) != digest:  # damaged: never handed to marshal (see HEADER)
            log.debug("ignoring damaged %s", self.file)
            return
        try:
            codes = marshal.loads(payload)
        except Exception:  # a file that this interpreter's marshal cannot read after all
            log.debug("ignoring unreadable %s", self.file, exc_info=True)
            return
        if isinstance(codes, dict):
            self._codes = {k: v for k, v in codes.items() if isinstance(k, bytes) and isinstance(v, CodeType)}

    def exec(self, source: Any, globals: dict[str, Any] | None = None,
             locals: Any = None, /) -> None:
        """``exec`` as ``dataclasses`` calls it, with compiled text taken from the cache."""
        if globals is None:  # what exec would use: the caller's (the dataclasses module's) globals
            globals = vars(dataclasses)
        if not isinstance(source, str):
            exec(source, globals, locals)
            return
        key = _key(source)
        code = self._codes.get(key)
        if code is None:
            # dont_inherit: compiled as exec compiles dataclasses' text, without this module's
            # `from __future__ import annotations`.
            code = self._codes[key] = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
            self._unsaved = True
        else:
            self.reused += 1
        self._used.add(key)
        exec(code, globals, locals)

    def install(self) -> None:
        """Read the file and have ``dataclasses`` compile through this cache."""
        if self._installed:
            return
        self.load()
        dataclasses.exec = self.exec  # type: ignore[attr-defined]  # a module global shadows the builtin
        self._installed = True

    def uninstall(self) -> None:
        if self._installed and vars(dataclasses).get("exec") == self.exec:
            del dataclasses.exec  # type: ignore[attr-defined]
        self._installed = False

    def save(self) -> bool:
        """Write the file when this run compiled methods it did not hold; False when nothing was
        written (nothing new, or the folder cannot be written to)."""
        if not self._unsaved:
            return False
        codes = dict(self._codes)  # copies made in C: a thread still importing cannot change them midway
        if len(codes) > MAX_ENTRIES:
            codes = {k: codes[k] for k in set(self._used) if k in codes}
        tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(sealed(marshal.dumps(codes)))
            os.replace(tmp, self.file)  # a reader sees the old file or the new one, never half of one
        except (OSError, ValueError):
            log.debug("could not write %s", self.file, exc_info=True)
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            return False
        self._unsaved = False
        return True

    def release(self) -> None:
        """Start-up is over: write what is new, put ``exec`` back and let go of the code objects no
        class uses (~2 MB), for a process that goes on running (the app)."""
        self.close()
        self._codes = {}
        self._used = set()

    def close(self) -> None:
        """Write what is new and put ``exec`` back."""
        self.uninstall()
        self.save()
