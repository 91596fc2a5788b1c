"""What a model's chat template supports, read from the template text (no Jinja engine).

llama-server renders a GGUF's ``tokenizer.chat_template`` itself (``--jinja``); the app only needs
to know what to ask for and how to read the answer: does the model think, does the prompt already
open its thinking block, which ``chat_template_kwargs`` key turns thinking off, which effort levels
it takes, does it render tools, does it want earlier turns' reasoning back. :func:`template_capabilities`
answers from the template's text with the small, documented rules below; ``tests/models/
test_chat_template.py`` checks them against every template in the pinned llama.cpp source.

The rules walk the template's tags once (``{{ }}``, ``{% %}``, raw text) keeping the stack of
enclosing ``if``/``for``/``macro`` blocks, and resolve ``{% set name = 'literal' %}`` string
variables (also ``'<think{}>'.format(SUFFIX)`` and ``a + b`` of literals), because many templates
name their markers once (``think_begin_token = '<seed:think>'``).

* **Reasoning markers** (:attr:`TemplateCapabilities.thinking_tags`): the first of
  :data:`KNOWN_MARKERS` whose start appears in the template or its string variables, else
  the most frequent think-like XML pair ``<name>``/``</name>`` (``name`` contains ``think`` and not
  ``instruction``: ``<think>``, ``<seed:think>``, ``<mm:think>``, ``<think:opensource>``,
  ``<thinking>``).
* **thinking**: markers were found, or the template reads a past turn's reasoning
  (``reasoning_content``, ``reasoning``, ``thinking``, ``thought`` of a message), a thinking
  switch or an effort variable.
* **opens_thinking**: inside the generation-prompt blocks (an ``if`` whose test names
  ``add_generation_prompt``, not negated), some output -- each alternative of an inline
  ``a if c else b`` on its own -- has its last start marker after its last end marker. With a
  thinking switch this means "when thinking is on" (llama-server sends ``enable_thinking: true``
  unless told otherwise).
* **thinking_toggle**: the first of :data:`THINKING_SWITCHES` the template reads as a free
  variable (not a message field, not a ``name=`` argument, not a name it always assigns itself).
  **thinking_off** is ``False``; ``0`` for ``thinking_budget``; for ``thinking_mode`` the string it
  is compared with that contains ``disable``. (llama-server maps ``reasoning_effort: "none"`` to
  ``enable_thinking: false`` only; other switches must be sent as ``chat_template_kwargs``.)
* **effort**: the first of ``reasoning_effort``, ``thinking_effort``, ``reasoning_strength`` read
  as a free variable; **effort_levels** are the strings it is compared with (``==``, ``in [...]``)
  or defaults to, in order of first appearance.
* **tools**: ``tools`` (or ``available_tools``) is read as a free variable;
  **tool_calls**: a message's ``tool_calls`` is read.
* **keeps_past_reasoning**: by default (no switch passed) some output of a message's reasoning
  field -- directly, through a macro that prints it, or through a variable set from it in an
  enclosing block of the output -- is not limited to the current turn. An output is limited when
  one of its enclosing conditions (also with ``set`` variables expanded, up to three levels) names
  a turn position -- ``loop.last``, ``last_user``/``last_query``/``last_assistant``/
  ``last_non_tool_call``, ``suffix_msgs``, ``is_after_last_user``, ``future_final`` -- or a
  training-only path (``is_training``), or compares a history switch with ``==``, or requires (as
  one ``and`` part) a variable the template never sets and llama-server does not pass (off unless
  the caller sends it); a condition ``true or ...`` (a history switch the template sets to
  ``true``) is not limiting. **reasoning_history** is the history switch the template reads
  (:data:`HISTORY_SWITCHES`), if any. **reasoning_field** is the message field the template
  reads reasoning from (``reasoning_content`` when it reads that one at all; llama-server copies
  ``reasoning_content`` into ``thinking`` for gpt-oss, llm-jp and LFM2, not into ``reasoning``).
* **system_role** is False when the template raises "System role not supported";
  **alternating_roles** when it raises about roles that must alternate; **single_tool_call** when
  it raises about one tool call at a time; **tool_call_id_length** is the length it demands of
  tool-call ids ("... alphanumeric strings with length 9").
* **prompt_switches**: ``/think``-style strings the template looks for in messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# Reasoning markers whose text is not an XML-like pair, in priority order:
# (start, end, start evidence regex or None = the start text itself).
KNOWN_MARKERS: tuple[tuple[str, str, str | None], ...] = (
    # OpenAI harmony (gpt-oss, llm-jp thinking): the analysis channel.
    ("<|channel|>analysis<|message|>", "<|end|>", None),
    # Gemma 4: the thought channel.
    ("<|channel>thought", "<channel|>", None),
    # Mistral reasoning models (Magistral, Ministral 3 Reasoning).
    ("[THINK]", "[/THINK]", None),
    # Cohere Command R7B / Command A reasoning.
    ("<|START_THINKING|>", "<|END_THINKING|>", None),
    # Kimi K3 builds its tags with a macro: open_tag('think') -> <|open|>think<|sep|>.
    ("<|open|>think<|sep|>", "<|close|>think<|sep|>", r"open_tag\(\s*['\"]think['\"]"),
    # Muse Glimmer (ATEM): the model's note to itself.
    ("<|start|>assistant to=self<|message|>", "<|eom|>", None),
    # ServiceNow Apriel 1.6: reasoning steps, then the final response marker.
    ("Here are my reasoning steps:\n", "[BEGIN FINAL RESPONSE]", None),
    # Swiss AI Apertus: inner monologue tokens.
    ("<|inner_prefix|>", "<|inner_suffix|>", None),
    # Upstage Solar Open.
    ("<|think|>", "<|end|>", r"<\|think\|>(?!\\n)"),
)
THINKING_SWITCHES = ("enable_thinking", "thinking", "reasoning", "thinking_mode", "thinking_budget")
EFFORT_SWITCHES = ("reasoning_effort", "thinking_effort", "reasoning_strength")
HISTORY_SWITCHES = ("preserve_thinking", "preserved_thinking", "keep_past_thinking", "clear_thinking",
                    "drop_thinking", "truncate_history_thinking", "think_render_option")
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking", "thought")

_TURN_GATE = re.compile(
    r"loop\.last|last_(?:user|query|assistant|non_tool_call)|suffix_msgs|is_after_last_user|future_final"
    r"|is_training")
# Variables llama-server always gives the template (a condition on them is not "off by default").
_PASSED = frozenset({"messages", "tools", "add_generation_prompt", "bos_token", "eos_token", "enable_thinking",
                     "loop", "true", "false", "none", "True", "False", "None", "namespace", "range"})
_TAG = re.compile(r"\{\{-?(.*?)-?\}\}|\{%-?(.*?)-?%\}|\{#.*?#\}", re.S)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_THINK_XML = re.compile(r"</?([A-Za-z0-9_:.\-]*think[A-Za-z0-9_:.\-]*)>")


@dataclass(frozen=True)
class TemplateCapabilities:
    """What a chat template supports (see the module docstring for the rules).

    Attributes:
        thinking: The template knows a reasoning channel (markers, reasoning fields or switches).
        thinking_tags: ``(start, end)`` of the reasoning block as the model writes it, if known.
        opens_thinking: The generation prompt ends inside an open reasoning block (DeepSeek-R1
            distills, QwQ): every token is reasoning until the end marker.
        thinking_toggle: The ``chat_template_kwargs`` key that switches thinking, if any.
        thinking_off: The value of that key that turns thinking off.
        effort: The ``chat_template_kwargs`` key for the reasoning effort, if any.
        effort_levels: The effort values the template names, in order of appearance.
        tools: The template renders the request's ``tools``.
        tool_calls: The template renders earlier assistant ``tool_calls``.
        keeps_past_reasoning: Reasoning of turns before the last user message is rendered, so
            stored thinking should be sent back with the history.
        reasoning_history: The switch that changes whether past reasoning is kept, if any.
        reasoning_field: The message field the template reads reasoning from, if any.
        system_role: The template accepts a system message.
        alternating_roles: The template refuses two user (or assistant) turns in a row.
        single_tool_call: The template refuses more than one tool call in a message.
        tool_call_id_length: The exact tool-call id length the template demands, if any.
        prompt_switches: Strings such as ``/no_think`` the template looks for in messages.
    """

    thinking: bool = False
    thinking_tags: tuple[str, str] | None = None
    opens_thinking: bool = False
    thinking_toggle: str | None = None
    thinking_off: bool | int | str | None = None
    effort: str | None = None
    effort_levels: tuple[str, ...] = ()
    tools: bool = False
    tool_calls: bool = False
    keeps_past_reasoning: bool = False
    reasoning_history: str | None = None
    reasoning_field: str | None = None
    system_role: bool = True
    alternating_roles: bool = False
    single_tool_call: bool = False
    tool_call_id_length: int | None = None
    prompt_switches: tuple[str, ...] = ()


# --------------------------------------------------------------------------- template walking


@dataclass
class _Node:
    kind: str                # "out" ({{ }}), "text" (raw), "set"
    code: str                # expression (out/set) or the raw text
    gates: tuple[str, ...]   # enclosing if/elif conditions and for iterables, innermost last
    in_gen: bool             # inside a generation-prompt block
    target: str = ""         # set: the assigned name
    top_level: bool = False  # set: outside every block


@dataclass
class _Walk:
    source: str
    nodes: list[_Node] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)   # every {% %} body, for free-variable reads


def _unescape(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), body)


def _code_only(expr: str) -> str:
    """The expression with string literals blanked (so their words are not read as names).

    Same length as ``expr``, so positions found in one hold in the other.
    """
    return _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], expr)


def _walk(template: str) -> _Walk:
    walk = _Walk(template)
    stack: list[tuple[str, str, bool]] = []  # (block kind, condition/iterable, opens a generation prompt)
    set_block: tuple[str, list[str]] | None = None
    pos = 0

    def gates() -> tuple[str, ...]:
        return tuple(cond for kind, cond, _ in stack if kind in ("if", "for") and cond)

    def in_gen() -> bool:
        return any(gen for _, _, gen in stack)

    def text(chunk: str) -> None:
        if not chunk:
            return
        if set_block is not None:
            set_block[1].append(chunk)
        else:
            walk.nodes.append(_Node("text", chunk, gates(), in_gen()))

    for m in _TAG.finditer(template):
        text(template[pos:m.start()])
        pos = m.end()
        if m.group(1) is not None:
            if set_block is not None:
                set_block[1].append("{{" + m.group(1) + "}}")
            else:
                walk.nodes.append(_Node("out", m.group(1).strip(), gates(), in_gen()))
            continue
        if m.group(2) is None:
            continue  # a comment
        stmt = m.group(2).strip()
        walk.statements.append(stmt)
        word, _, rest = stmt.partition(" ")
        rest = rest.strip()
        if word == "if":
            names_gen = bool(re.search(r"(?<!not )\badd_generation_prompt\b(?! is (?:not )?defined)", rest))
            stack.append(("if", rest, names_gen))
        elif word == "elif":
            if stack:
                _, cond, gen = stack.pop()
                stack.append(("if", f"not ({cond}) and ({rest})", gen))
        elif word == "else":
            if stack and stack[-1][0] == "if":
                _, cond, gen = stack.pop()
                stack.append(("if", f"not ({cond})", gen))
        elif word == "for":
            iterable = rest.split(" in ", 1)[1] if " in " in rest else rest
            stack.append(("for", iterable, False))
        elif word in ("macro", "call", "filter"):
            stack.append((word, "", False))
        elif word in ("endif", "endfor", "endmacro", "endcall", "endfilter"):
            if stack:
                stack.pop()
        elif word == "set":
            target, eq, value = rest.partition("=")
            target = target.strip()
            if eq:
                walk.nodes.append(_Node("set", value.strip(), gates(), in_gen(), target, not stack))
            else:
                set_block = (target, [])
        elif word == "endset" and set_block is not None:
            target, parts = set_block
            set_block = None
            walk.nodes.append(_Node("set", repr("".join(parts)), gates(), in_gen(), target, not stack))
    text(template[pos:])
    return walk


def _string_vars(walk: _Walk) -> dict[str, str]:
    """Variables set to a string built only from literals and other such variables."""
    values: dict[str, str] = {}
    assigned: dict[str, list[str]] = {}
    for node in walk.nodes:
        if node.kind == "set":
            assigned.setdefault(node.target, []).append(node.code)
    for _ in range(3):  # a variable may be built from another one
        for name, exprs in assigned.items():
            if len(exprs) != 1 or name in values:
                continue
            value = _evaluate_string(exprs[0], values)
            if value is not None:
                values[name] = value
    return values


def _evaluate_string(expr: str, values: dict[str, str]) -> str | None:
    """``'a' + b ~ 'c'`` or ``'<x{}>'.format(v)`` of known strings, else None."""
    fmt = re.fullmatch(r"""(['"].*['"])\s*\.format\(\s*([A-Za-z_]\w*)\s*\)""", expr.strip(), re.S)
    if fmt and _STRING.fullmatch(fmt.group(1)) and fmt.group(2) in values:
        return _unescape(fmt.group(1)).replace("{}", values[fmt.group(2)], 1)
    parts = re.split(r"\s*[+~]\s*", expr.strip())
    out = []
    for part in parts:
        if _STRING.fullmatch(part):
            out.append(_unescape(part))
        elif part in values:
            out.append(values[part])
        else:
            return None
    return "".join(out)


def _alternatives(code: str, values: dict[str, str]) -> list[str]:
    """The strings an output may produce, one per branch of ``a if c else b`` (approximate)."""
    # Split at top-level ``if``/``else`` words outside string literals.
    blanks = _code_only(code)
    cuts = [m.start() for m in re.finditer(r"\b(?:if|else)\b", blanks)]
    pieces, start = [], 0
    for cut in [*cuts, len(code)]:
        pieces.append(code[start:cut])
        start = cut
    out = []
    for piece in pieces:
        text = []
        for m in re.finditer(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[A-Za-z_]\w*""", piece):
            token = m.group(0)
            if token[0] in "'\"":
                text.append(_unescape(token))
            elif token in values:
                text.append(values[token])
        out.append("".join(text) + "\x00" + piece)  # the raw piece too, for macro evidence
    return out


# --------------------------------------------------------------------------- rules


def _markers(template: str, values: dict[str, str]) -> tuple[str, str] | None:
    material = template + "\n" + "\n".join(values.values())
    for start, end, evidence in KNOWN_MARKERS:
        if re.search(evidence or re.escape(start), material):
            return start, end
    counts: dict[str, int] = {}
    for m in _THINK_XML.finditer(material):
        name = m.group(1)
        if "instruction" not in name:
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None
    name = max(counts, key=lambda n: (counts[n], -material.find(n)))
    return f"<{name}>", f"</{name}>"


def _marker_regexes(tags: tuple[str, str] | None) -> tuple[str, str] | None:
    if tags is None:
        return None
    for start, end, evidence in KNOWN_MARKERS:
        if (start, end) == tags:
            return evidence or re.escape(start), re.escape(end)
    return re.escape(tags[0]), re.escape(tags[1])


def _opens(walk: _Walk, values: dict[str, str], tags: tuple[str, str] | None) -> bool:
    regexes = _marker_regexes(tags)
    if regexes is None:
        return False
    start_re, end_re = regexes
    for node in walk.nodes:
        if not node.in_gen:
            continue
        candidates = [node.code] if node.kind == "text" else _alternatives(node.code, values)
        for text in candidates:
            starts = [m.end() for m in re.finditer(start_re, text)]
            ends = [m.end() for m in re.finditer(end_re, text)]
            if starts and (not ends or max(starts) > max(ends)):
                return True
    return False


def _free_reads(walk: _Walk) -> set[str]:
    """Names read as free variables in tags: not ``x.name``, not ``name=`` arguments, not strings."""
    reads: set[str] = set()
    sources = [n.code for n in walk.nodes if n.kind in ("out", "set")] + walk.statements
    for code in sources:
        blank = _code_only(code)
        for m in _IDENT.finditer(blank):
            if m.start() > 0 and blank[m.start() - 1] == ".":
                continue
            if re.match(r"\s*=(?!=)", blank[m.end():]) and not blank[:m.start()].strip().endswith("set"):
                continue  # a keyword argument: namespace(enable_thinking=true)
            reads.add(m.group(0).split(".")[0])
    return reads


def _self_assigned(walk: _Walk, name: str) -> bool:
    """The template always assigns ``name`` itself (top level, not from its own old value)."""
    for node in walk.nodes:
        if node.kind == "set" and node.target == name and node.top_level:
            return not re.search(rf"\b{re.escape(name)}\b", _code_only(node.code))
    return False


def _switch(walk: _Walk, reads: set[str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if name in reads and not _self_assigned(walk, name):
            return name
    return None


def _levels(template: str, name: str) -> tuple[str, ...]:
    n = re.escape(name)
    patterns = (
        rf"\b{n}\s*(?:\|\s*lower\s*)?[!=]=\s*(['\"])([\w-]+)\1",
        rf"(['\"])([\w-]+)\1\s*[!=]=\s*{n}\b",
        rf"\bset\s+{n}\s*=\s*(['\"])([\w-]+)\1",
        rf"\b{n}\b[^%}}]*\belse\s+(['\"])([\w-]+)\1",
        rf"\b{n}\s*\|\s*default\(\s*(['\"])([\w-]+)\1",
    )
    found: list[tuple[int, str]] = []
    for pattern in patterns:
        found += [(m.start(2), m.group(2)) for m in re.finditer(pattern, template)]
    for m in re.finditer(rf"\b{n}\s+(?:not\s+)?in\s+\[([^\]]*)\]", template):
        found += [(m.start(1) + s.start(), _unescape(s.group(0))) for s in _STRING.finditer(m.group(1))]
    levels: list[str] = []
    for _, level in sorted(found):
        if level not in levels:
            levels.append(level)
    return tuple(levels)


def _field_read(code: str, name: str) -> bool:
    """``code`` reads field ``name`` of a message (``message.x``, ``msg['x']``, ``'x' in message``)."""
    n = re.escape(name)
    obj = r"\b(?:message|msg|m|block|content\[0\])"
    return bool(re.search(rf"{obj}(?:\.{n}\b|\[\s*['\"]{n}['\"]\s*\]|\.get\(\s*['\"]{n}['\"])"
                          rf"|['\"]{n}['\"]\s+in\s+(?:message|msg|m)\b", code))


def _reasoning_fields(walk: _Walk) -> list[str]:
    codes = [n.code for n in walk.nodes if n.kind in ("out", "set")] + walk.statements
    return [f for f in REASONING_FIELDS if any(_field_read(c, f) for c in codes)]


def _limiting(gate: str, sets: dict[str, list[str]], constants: dict[str, str],
              history: tuple[str, ...], unset: set[str]) -> bool:
    """Whether a condition limits an output to the current turn (or to a non-default switch)."""
    def limits(text: str) -> bool:
        for name, value in constants.items():
            text = re.sub(rf"(?<![.\w]){re.escape(name)}\b", value, text)
        if re.search(r"\btrue\)*\s+or\b", text):
            return False
        if _TURN_GATE.search(text):
            return True
        if any(re.search(rf"\b{re.escape(h)}\s*[!=]=", text) for h in history):
            return True
        # ``a and b``: a switch nobody sets is undefined (false) unless the caller passes it.
        return any(part.strip() in unset for part in re.split(r"\band\b", _code_only(text)))

    # The raw condition names the index (``ns.last_user_index``); an expansion may name what a
    # variable means (``keep_reasoning`` -> ``... is_after_last_user ...``). Deeper expansions
    # replace those names in turn, so each level is checked.
    return any(limits(_expand(gate, sets, depth)) for depth in range(4))


def _expand(gate: str, sets: dict[str, list[str]], depth: int) -> str:
    """The condition with variables that are set from one expression replaced by it, ``depth`` times."""
    if depth == 0:
        return gate

    def repl(m: re.Match[str]) -> str:
        exprs = sets.get(m.group(0))
        return f"({_expand(exprs[0], sets, depth - 1)})" if exprs and len(exprs) == 1 else m.group(0)
    return re.sub(r"(?<![.\w'\"])[A-Za-z_]\w*(?:\.\w+)?", repl, gate)


def _reaches(assigned: tuple[str, ...], used: tuple[str, ...]) -> bool:
    """An assignment made under ``assigned`` may be what an output under ``used`` prints.

    Flow-insensitive but branch-aware: the output must sit in the assignment's enclosing blocks
    (all but its innermost one, which is usually "if the field is set").
    """
    outer = assigned[:-1]
    return used[:len(outer)] == outer


def _keeps_past(walk: _Walk, reads: set[str], fields: list[str], history: tuple[str, ...]) -> bool:
    if not fields:
        return False
    sets: dict[str, list[str]] = {}
    constants: dict[str, str] = {}
    for node in walk.nodes:
        if node.kind == "set":
            sets.setdefault(node.target, []).append(node.code)
            if node.top_level and node.code.strip() in ("true", "True", "false", "False"):
                constants[node.target] = node.code.strip().lower()

    def reads_reasoning(code: str) -> bool:
        return any(_field_read(code, f) for f in fields)

    # Variables holding reasoning: name -> the gates of each assignment that fills it from reasoning.
    tainted: dict[str, list[tuple[str, ...]]] = {}
    for _ in range(3):
        for node in walk.nodes:
            if node.kind != "set":
                continue
            code = _code_only(node.code) if not reads_reasoning(node.code) else node.code
            via = reads_reasoning(node.code) or any(
                re.search(rf"(?<![.\w]){re.escape(v)}\b", code) for v in tainted if v != node.target)
            if via and node.gates not in tainted.setdefault(node.target, []):
                tainted[node.target].append(node.gates)
    macros_with_reasoning = _macros_outputting(walk, reads_reasoning)

    unset = {name for name in reads if name not in sets and name not in _PASSED}

    def free(gates: tuple[str, ...]) -> bool:
        return not any(_limiting(g, sets, constants, history, unset) for g in gates)

    for node in walk.nodes:
        if node.kind != "out":
            continue
        code = _code_only(node.code)
        if reads_reasoning(node.code) and free(node.gates):
            return True
        for name, assignments in tainted.items():
            if re.search(rf"(?<![.\w]){re.escape(name)}\b", code) and any(
                    _reaches(g, node.gates) and free(node.gates + g) for g in assignments):
                return True
        if any(re.search(rf"\b{re.escape(mac)}\(", code) for mac in macros_with_reasoning) and free(node.gates):
            return True
    return False


def _macros_outputting(walk: _Walk, reads_reasoning: Callable[[str], bool]) -> set[str]:
    """Macros whose body outputs a reasoning field (their call sites count as outputs)."""
    names: set[str] = set()
    for m in re.finditer(r"\{%-?\s*macro\s+(\w+)\((.*?)%\}(.*?)\{%-?\s*endmacro", walk.source, re.S):
        if any(reads_reasoning(out.group(1)) for out in re.finditer(r"\{\{-?(.*?)-?\}\}", m.group(3), re.S)):
            names.add(m.group(1))
    return names


def _raises(template: str) -> list[str]:
    return [_unescape(m.group(1)) for m in re.finditer(r"raise_exception\(\s*(" + _STRING.pattern + ")", template)]


def template_capabilities(template: str) -> TemplateCapabilities:
    """What ``template`` (a GGUF ``tokenizer.chat_template``) supports; see the module docstring."""
    return _capabilities(template)


@lru_cache(maxsize=64)
def _capabilities(template: str) -> TemplateCapabilities:
    walk = _walk(template)
    values = _string_vars(walk)
    reads = _free_reads(walk)
    tags = _markers(template, values)
    toggle = _switch(walk, reads, THINKING_SWITCHES)
    effort = _switch(walk, reads, EFFORT_SWITCHES)
    fields = _reasoning_fields(walk)
    history = tuple(h for h in HISTORY_SWITCHES if h in reads and not _self_assigned(walk, h))
    off: bool | int | str | None = None
    if toggle == "thinking_mode":
        off = next((lv for lv in _levels(template, toggle) if "disable" in lv), None)
    elif toggle == "thinking_budget":
        off = 0
    elif toggle is not None:
        off = False
    raises = _raises(template)
    id_length = next((int(m.group(1)) for r in raises for m in [re.search(r"length (\d+)", r)] if m), None)
    switches = []
    for m in re.finditer(r"(['\"])(/\w+)\1\s+(?:not\s+)?in\b", template):
        if m.group(2) not in switches:
            switches.append(m.group(2))
    return TemplateCapabilities(
        thinking=bool(tags or fields or toggle or effort),
        thinking_tags=tags,
        opens_thinking=_opens(walk, values, tags),
        thinking_toggle=toggle,
        thinking_off=off,
        effort=effort,
        effort_levels=_levels(template, effort) if effort else (),
        tools="tools" in reads or "available_tools" in reads,
        tool_calls=bool(re.search(r"\.tool_calls\b|\[\s*['\"]tool_calls['\"]\s*\]|get\(\s*['\"]tool_calls['\"]"
                                  r"|['\"]tool_calls['\"]\s+in\s+\w", template)),
        keeps_past_reasoning=_keeps_past(walk, reads, fields, history),
        reasoning_history=history[0] if history else None,
        reasoning_field=fields[0] if fields else None,
        system_role=not any(re.search(r"system role not supported", r, re.I) for r in raises),
        alternating_roles=any("alternate" in r for r in raises),
        single_tool_call=any(re.search(r"single tool.calls? at once", r) for r in raises),
        tool_call_id_length=id_length,
        prompt_switches=tuple(switches),
    )


def read_chat_template(path: Path) -> str | None:
    """``tokenizer.chat_template`` of a local GGUF, reading only its header; None when absent.

    Raises:
        GGUFError: Not a GGUF file, or a damaged header.
    """
    from strata_gui.core.models.gguf_meta import read_string_field

    return read_string_field(path, "tokenizer.chat_template") or None
