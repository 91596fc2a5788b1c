"""The compiled-dataclass cache: classes behave exactly as without it, a second run compiles
nothing, and a damaged, foreign or unwritable cache file costs nothing but the speed."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.classcache import DIGEST_SIZE, HEADER, ClassCodeCache, cache_file, sealed

# A module as Strata writes them (postponed annotations), with what dataclasses generate code for:
# defaults, factories, keyword-only fields, frozen classes (setattr/delattr/hash), order, slots.
SOURCE = textwrap.dedent('''
    from __future__ import annotations
    from dataclasses import dataclass, field

    @dataclass
    class Message:
        role: str
        text: str = ""
        tags: list[str] = field(default_factory=list)
        tokens: int = field(default=0, kw_only=True)

    @dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 2

    @dataclass(slots=True)
    class Slotted:
        name: str
        size: int = 1
''')


def define(name: str) -> dict[str, Any]:
    """Run SOURCE as a fresh module (so dataclasses builds every class now) and return its names."""
    module = type(sys)(name)
    sys.modules[name] = module
    try:
        exec(compile(SOURCE, f"<{name}>", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module.__dict__


def behaviour(ns: dict[str, Any]) -> list[object]:
    """What a user of these classes can observe."""
    m = ns["Message"]("user", "hi", tokens=3)
    m2 = ns["Message"]("user")
    p = ns["Point"](1)
    out: list[object] = [repr(m), repr(m2), m == ns["Message"]("user", "hi", tokens=3), m2.tags is not
                         ns["Message"]("user").tags, repr(p), p < ns["Point"](2), hash(p) == hash(ns["Point"](1, 2)),
                         repr(ns["Slotted"]("a")), ns["Message"].__init__.__annotations__]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5
    with pytest.raises(TypeError):
        ns["Message"]("user", "hi", [], 3)  # tokens is keyword-only
    with pytest.raises(AttributeError):
        ns["Slotted"]("a").other = 1  # type: ignore[attr-defined]
    return out


def test_classes_behave_the_same_and_a_second_run_compiles_nothing(tmp_path: Path) -> None:
    plain = behaviour(define("plain_module"))
    file = cache_file(tmp_path)
    first = ClassCodeCache(file)
    first.install()
    try:
        cached = behaviour(define("first_module"))
    finally:
        first.close()
    assert "exec" not in vars(dataclasses)  # the standard library is as it was
    assert cached == plain
    assert first.compiled > 10 and file.read_bytes().startswith(HEADER)
    written = file.stat().st_mtime_ns

    second = ClassCodeCache(file)
    second.install()
    try:
        again = behaviour(define("second_module"))
    finally:
        second.close()
    assert again == plain
    assert (second.compiled, second.reused) == (0, first.compiled)
    assert file.stat().st_mtime_ns == written  # nothing new: not written again
    # The generated __init__ is compiled as dataclasses compiles it, not with this test module's
    # postponed annotations: its return annotation is None, not the string "None".
    assert again[-1]["return"] is None


def test_a_changed_class_is_compiled_anew(tmp_path: Path) -> None:
    file = cache_file(tmp_path)
    cache = ClassCodeCache(file)
    cache.install()
    try:
        define("before")

        @dataclasses.dataclass
        class Changed:
            role: str
            added: int = 7

        assert repr(Changed("x")) == "test_a_changed_class_is_compiled_anew.<locals>.Changed(role='x', added=7)"
    finally:
        cache.close()
    assert cache.compiled > 0


@pytest.mark.parametrize("content", [
    b"",
    b"garbage, not a cache",
    HEADER + b"\x00\x01\x02 truncated marshal",
    HEADER[:-4] + b"\x00\x00\x00\x01" + b"written by another Python",  # same format, other interpreter
    HEADER + __import__("marshal").dumps(["a list", "not a dict"]),  # no digest
    sealed(__import__("marshal").dumps(["a list", "not a dict"])),  # sound, but not what Strata writes
    sealed(b"\xff not marshal data"),
])
def test_a_damaged_or_foreign_file_is_ignored_and_replaced(tmp_path: Path, content: bytes) -> None:
    file = cache_file(tmp_path)
    file.write_bytes(content)
    cache = ClassCodeCache(file)
    cache.install()
    try:
        assert behaviour(define("damaged")) == behaviour(define("reference"))
    finally:
        cache.close()
    assert cache.compiled > 0
    reread = ClassCodeCache(file)
    reread.load()
    reread.install()
    try:
        define("after")
    finally:
        reread.uninstall()
    assert reread.compiled == 0


def test_a_flipped_bit_anywhere_in_the_file_is_ignored(tmp_path: Path) -> None:
    """marshal does not check its input: one flipped bit in a code object raised SystemError or
    crashed the interpreter, at every start, until the user deleted the file."""
    file = cache_file(tmp_path)
    cache = ClassCodeCache(file)
    cache.install()
    try:
        define("written")
    finally:
        cache.close()
    good = file.read_bytes()
    assert len(good) > len(HEADER) + DIGEST_SIZE + 100
    for at in range(len(HEADER), len(good), max(1, len(good) // 97)):  # the digest and ~100 places after it
        damaged = bytearray(good)
        damaged[at] ^= 0x80
        file.write_bytes(bytes(damaged))
        reread = ClassCodeCache(file)
        reread.load()
        assert not reread._codes, f"byte {at}: a damaged file was used"


def test_the_strata_command_starts_with_a_damaged_cache_file(tmp_path: Path) -> None:
    env = {**os.environ, "STRATA_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "strata_gui", "engines", "list"]
    assert subprocess.run(command, env=env, capture_output=True, timeout=120).returncode == 0
    [file] = (tmp_path / "cache").glob("dataclass-code-*.bin")
    damaged = bytearray(file.read_bytes())
    damaged[len(HEADER) + DIGEST_SIZE + 54] ^= 0x80  # in the code objects (SystemError before the digest)
    file.write_bytes(bytes(damaged))
    for _ in range(2):  # the damaged file is replaced by the first run
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    assert file.read_bytes() != bytes(damaged)


def test_an_unwritable_cache_folder_costs_only_speed(tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder should be")
    cache = ClassCodeCache(cache_file(blocker))
    cache.install()
    try:
        assert behaviour(define("unwritable")) == behaviour(define("reference2"))
    finally:
        cache.uninstall()
    assert cache.save() is False
    assert [p.name for p in tmp_path.iterdir()] == ["cache"]  # no temporary file left behind


def test_the_strata_command_keeps_the_cache_in_its_cache_folder(tmp_path: Path) -> None:
    """Through the real entry point: the first command writes the cache under Strata's cache
    folder, the next one uses it and leaves it as it was."""
    env = {**os.environ, "STRATA_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen"}
    file = cache_file(tmp_path / "home" / "cache")

    def run() -> None:
        res = subprocess.run([sys.executable, "-m", "strata_gui", "engines", "list"], env=env, capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr

    run()
    assert file.is_file() and file.stat().st_size > 10_000
    written = file.stat().st_mtime_ns
    run()
    assert file.stat().st_mtime_ns == written


def test_release_writes_what_is_new_and_leaves_later_classes_to_the_standard_library(tmp_path: Path) -> None:
    """The app lets go of the cache once its window is usable: what start-up compiled is kept for
    the next launch, and classes made afterwards are compiled as without it."""
    file = cache_file(tmp_path)
    cache = ClassCodeCache(file)
    cache.install()
    define("start_up")
    cache.release()
    assert file.is_file() and "exec" not in vars(dataclasses)
    compiled = cache.compiled
    assert behaviour(define("later")) == behaviour(define("later_reference"))
    assert cache.compiled == compiled


def test_the_app_keeps_what_its_start_up_compiled(tmp_path: Path) -> None:
    """The windowed app through the real entry: its first launch writes the cache once the window
    is usable, the second finds everything its start-up needs there."""
    env = {**os.environ, "STRATA_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen"}
    file = cache_file(tmp_path / "home" / "cache")

    def launch() -> None:
        res = subprocess.run([sys.executable, "-m", "strata_gui", "--exit-when-shown"], env=env, capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert "ready-at" in res.stdout

    launch()
    first = ClassCodeCache(file)
    first.load()
    assert len(first._codes) > 300  # the window's and the core's classes
    written = file.stat().st_mtime_ns
    launch()
    assert file.stat().st_mtime_ns == written  # nothing new to write: all of it came from the file
