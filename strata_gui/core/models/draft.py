"""Draft models for speculative decoding: the draft must speak the main model's vocabulary.

llama-server checks this itself at load time, but only in its log, after the main model was loaded;
Strata checks the GGUF headers first (the tokenizer's token list must be the same) and says so in a
sentence before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import ModelError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.gguf_meta import LongArray, read_header

TOKENS = "tokenizer.ggml.tokens"


@dataclass(frozen=True)
class Vocabulary:
    """A tokenizer's identity: its kind, size and a digest of every token in order."""

    model: str
    size: int
    digest: str


def read_vocabulary(path: Path) -> Vocabulary:
    """The vocabulary of the GGUF at ``path`` (blocking).

    The header parser hashes the token list while it skips it (Qwen's 151k tokens: a few ms, not
    a Python string per token).

    Raises:
        GGUFError: the file cannot be read or is not a complete GGUF file.
        ModelError: it has no token list.
    """
    meta = read_header(path, digest=(TOKENS,))
    tokens = meta.get(TOKENS)
    digest = meta.digests.get(TOKENS)
    if digest is None or not (isinstance(tokens, LongArray | list)):
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{file} has no vocabulary."), file=path.name),
                         hint=QT_TRANSLATE_NOOP("Core", "Choose a language model in GGUF format."))
    size = tokens.count if isinstance(tokens, LongArray) else len(tokens)
    kind = meta.get("tokenizer.ggml.model")
    return Vocabulary(kind if isinstance(kind, str) else "", size, digest)


def check_draft(model: Path, draft: Path) -> None:
    """Raise unless ``draft`` can draft for ``model`` (the same tokens, in the same order).

    Raises:
        ModelError: the vocabularies differ (with what differs), or a file cannot be read.
    """
    if not draft.is_file():
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "The draft model {name} was not found."),
                           name=draft.name),
                         hint=QT_TRANSLATE_NOOP("Core", "Choose the draft model again."))
    main, small = read_vocabulary(model), read_vocabulary(draft)
    if main == small:
        return
    if main.model != small.model or main.size != small.size:
        what: str = T(QT_TRANSLATE_NOOP("Core", "{draft_tokenizer} tokenizer, {draft_size:,} tokens vs "
                                                "{tokenizer}, {size:,}"),
                      draft_tokenizer=small.model or "unknown", draft_size=small.size,
                      tokenizer=main.model or "unknown", size=main.size)
    else:
        what = QT_TRANSLATE_NOOP("Core", "the same number of tokens, but different ones")
    raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{draft} cannot draft for {model}: its vocabulary differs "
                                                 "({what})."),
                       draft=draft.name, model=model.name, what=what),
                     hint=QT_TRANSLATE_NOOP("Core", "Pick a smaller model of the same family (same "
                                                    "tokenizer), e.g. a 0.5B for a 7B."))
