"""ChatClient.stream: thinking, answer and tool calls told apart; request options; the engine's
chat-format failure; progress from /slots.

The real engine where it can show it (the DeepSeek-R1 distill template streams thinking; the
Functionary v3.2 template makes a forced tool call and fails its format on random text), and
scripted streams on a loopback server for what it cannot (tags cut across chunks, a failure after
some text, interleaved tool-call pieces).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import ChatError, ChatFormatError, ServerError
from strata_gui.core.runtime.client import (
    ANSWER,
    DEFAULT_MAX_TOKENS,
    THINKING,
    TOOL_CALL,
    ChatClient,
    ChatReply,
    ReplyStats,
    RequestOptions,
    ResponseFormat,
    SamplingParams,
    StreamPiece,
    ToolCall,
)
from strata_gui.core.runtime.structured import check_json
from tests.runtime.sse_server import sse_server
from tests.support import engines as _engines

Engines = _engines.TestEngines
HELLO = [{"role": "user", "content": "Say hello"}]
# Functionary v3.2's grammar lets a forced reply open with text (">>>all") before the call; random
# weights take either path. Banning the tokens that spell "all" leaves the tool call the only one.
ONLY_TOOL_CALLS = {"logit_bias": [["a", False], ["al", False], ["all", False]]}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    # An enum keeps the grammar-forced arguments short, so even random weights finish the call.
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
                   "required": ["city"]}}}


def run_stream(base: str, *, options: RequestOptions | None = None, sampling: SamplingParams | None = None,
               api_key: str | None = None) -> tuple[list[StreamPiece], ChatReply | BaseException]:
    """Stream one reply; return the pieces and the reply (or the error it raised)."""
    async def scenario() -> tuple[list[StreamPiece], ChatReply | BaseException]:
        pieces: list[StreamPiece] = []
        async with httpx.AsyncClient(trust_env=False) as http:
            client = ChatClient(http, base, api_key)
            try:
                reply = await client.stream(HELLO, sampling=sampling, options=options, on_piece=pieces.append)
            except (ChatError, ServerError) as exc:
                return pieces, exc
        return pieces, reply

    return asyncio.run(scenario())


def kinds(pieces: list[StreamPiece]) -> list[tuple[str, str]]:
    return [(p.kind, p.text) for p in pieces]


# -- scripted streams ------------------------------------------------------------------------------

def test_thinking_split_by_the_server_then_the_answer() -> None:
    with sse_server("reasoning") as (base, _):
        pieces, reply = run_stream(base)
    assert isinstance(reply, ChatReply)
    assert kinds(pieces) == [(THINKING, "\nThinking"), (THINKING, " hard"), (ANSWER, "Done"), (ANSWER, ".")]
    assert [(p.tokens, p.total) for p in pieces] == [(1, 1), (2, 2), (1, 3), (2, 4)]
    assert reply.thinking == "Thinking hard" and reply.text == "Done."
    s = reply.stats
    assert s.thinking_n == 2 and s.ttft_s is not None and s.answer_s is not None and s.answer_s >= s.ttft_s
    assert s.thinking_s is not None and s.predicted_n == 4 and s.finish_reason == "stop"


def test_think_tags_cut_across_chunks_are_split_out_of_the_text() -> None:
    """A server that leaves the thinking in the text, its tags cut by the network: "<thi" + "nk>"."""
    with sse_server("think-tags") as (base, _):
        pieces, reply = run_stream(base)
    assert isinstance(reply, ChatReply)
    assert kinds(pieces) == [(THINKING, "Let me"), (THINKING, " see."), (ANSWER, "Hello"), (ANSWER, " <b>there</b>")]
    assert reply.thinking == "Let me see." and reply.text == "Hello <b>there</b>"
    assert reply.stats.thinking_n == 2 and reply.stats.answer_s is not None


def test_split_thinking_off_keeps_the_text_as_sent() -> None:
    with sse_server("think-tags") as (base, _):
        pieces, reply = run_stream(base, options=RequestOptions(split_thinking=False))
    assert isinstance(reply, ChatReply)
    assert {p.kind for p in pieces} == {ANSWER}
    assert reply.text == "\n<think>\nLet me see.</think>\n\nHello <b>there</b>" and reply.thinking == ""


def test_a_lone_closing_tag_splits_the_finished_reply() -> None:
    """The prompt opened the thinking, so only "</think>" arrives: pieces went out as answer (nothing
    marked them yet), and the reply, which is authoritative, tells the two apart."""
    with sse_server("think-close-only") as (base, _):
        pieces, reply = run_stream(base)
    assert isinstance(reply, ChatReply)
    assert {p.kind for p in pieces} == {ANSWER}
    assert reply.thinking == "Hmm, fine." and reply.text == "Yes."
    assert reply.stats.thinking_n == 3 and reply.stats.thinking_s is not None


def test_the_original_api_gets_the_answer_only() -> None:
    async def scenario(base: str) -> tuple[list[str], ChatReply]:
        deltas: list[str] = []
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await ChatClient(http, base).stream_chat(HELLO, None, deltas.append)
        return deltas, reply

    with sse_server("think-tags") as (base, requests):
        deltas, reply = asyncio.run(scenario(base))
    assert deltas == ["Hello", " <b>there</b>"] and reply.text == "".join(deltas)
    assert reply.thinking == "Let me see."
    assert "max_tokens" not in requests[0]  # its callers' requests are unchanged


def test_tool_calls_without_ids_or_with_the_same_id_get_ids_of_their_own() -> None:
    """Stored under "" (or one id twice), the second call's record replaced the first's, and the
    model was told it had called the same tool twice."""
    with sse_server("tool-calls-without-ids") as (base, _):
        _, reply = run_stream(base)
    assert isinstance(reply, ChatReply)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("add", '{"a": 1}'), ("echo", '{"t": "x"}'), ("add", "{}"), ("echo", "{}")]
    ids = [c.id for c in reply.tool_calls]
    assert all(ids) and len(set(ids)) == 4 and ids[2] == "same"  # a sound id is kept


def test_tool_calls_are_assembled_from_their_pieces() -> None:
    with sse_server("tool-calls") as (base, _):
        pieces, reply = run_stream(base)
    assert isinstance(reply, ChatReply)
    assert [(p.kind, p.tool_index, p.tool_name, p.text) for p in pieces] == [
        (TOOL_CALL, 0, "get_weather", ""), (TOOL_CALL, 0, "get_weather", '{"ci'),
        (TOOL_CALL, 1, "search", '{"q": '), (TOOL_CALL, 0, "get_weather", 'ty": "Pa'),
        (TOOL_CALL, 1, "search", '"x"}'), (TOOL_CALL, 0, "get_weather", 'ris"}')]
    assert [p.tokens for p in pieces] == [1, 2, 3, 4, 4, 5]  # one chunk, one token
    assert reply.tool_calls == (ToolCall("a1", "get_weather", '{"city": "Paris"}'),
                                ToolCall("b2", "search", '{"q": "x"}'))
    assert reply.stats.finish_reason == "tool_calls" and reply.text == ""
    assert reply.tool_calls[0].parsed_arguments() == {"city": "Paris"}
    assert reply.tool_calls[1].to_openai() == {"id": "b2", "type": "function",
                                               "function": {"name": "search", "arguments": '{"q": "x"}'}}
    with pytest.raises(ChatError, match="not valid JSON"):
        ToolCall("c", "f", '{"a": ').parsed_arguments()


@pytest.mark.parametrize("script", ["format-failure", "format-failure-http"])
def test_a_format_failure_is_the_models_not_the_engines_and_keeps_the_partial_reply(script: str) -> None:
    with sse_server(script) as (base, _):
        pieces, exc = run_stream(base)
    assert isinstance(exc, ChatFormatError) and not isinstance(exc, ServerError)
    assert exc.message == "The model's output did not match its chat format."
    assert exc.hint and "chat-format parsing" in exc.hint and "peg-native" in (exc.details or "")
    partial = exc.partial
    assert isinstance(partial, ChatReply)
    if script == "format-failure":  # after some thinking and answer text, all of it kept
        assert kinds(pieces) == [(THINKING, "Thinking"), (ANSWER, "Half an ans"), (ANSWER, "wer")]
        assert partial.thinking == "Thinking" and partial.text == "Half an answer"
        assert partial.stats.thinking_n == 1 and partial.stats.ttft_s is not None
    else:  # on the first result: an HTTP 500 before any text
        assert pieces == [] and partial.text == "" and partial.thinking == ""


def test_the_original_api_raises_the_format_error_too() -> None:
    async def scenario(base: str) -> BaseException:
        async with httpx.AsyncClient(trust_env=False) as http:
            with pytest.raises(ChatFormatError) as info:
                await ChatClient(http, base).stream_chat(HELLO)
        return info.value

    with sse_server("format-failure") as (base, _):
        exc = asyncio.run(scenario(base))
    assert isinstance(exc, ChatFormatError) and exc.partial.text == "Half an answer"


def test_options_build_the_request_body_with_only_what_is_set() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    options = RequestOptions(thinking=False, effort="high", thinking_budget=256, reasoning_format="none",
                             response_format=ResponseFormat(schema), tools=[WEATHER_TOOL], tool_choice="required",
                             max_tokens=100)
    with sse_server("ok") as (base, requests):
        run_stream(base, options=options, sampling=SamplingParams(temperature=0.3, max_tokens=50))
        run_stream(base, options=RequestOptions(thinking=True, effort="low",
                                                response_format=ResponseFormat()))
        run_stream(base, sampling=SamplingParams(max_tokens=50))
        run_stream(base, options=RequestOptions(max_tokens=-1, tool_choice="auto",
                                                extra={"logit_bias": [[1, -5]], "max_tokens": 7}))
    full, on, plain, unlimited = requests
    assert full["chat_template_kwargs"] == {"enable_thinking": False}
    assert full["reasoning_effort"] == "none"  # off wins over an effort level
    assert full["thinking_budget_tokens"] == 256 and full["reasoning_format"] == "none"
    assert full["response_format"] == {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    assert full["tools"] == [WEATHER_TOOL] and full["tool_choice"] == "required"
    assert full["max_tokens"] == 100 and full["temperature"] == 0.3  # the request's limit over the sampling's
    assert on["chat_template_kwargs"] == {"enable_thinking": True} and on["reasoning_effort"] == "low"
    assert on["response_format"] == {"type": "json_object"} and on["max_tokens"] == DEFAULT_MAX_TOKENS
    sent_by_options = {"chat_template_kwargs", "reasoning_effort", "thinking_budget_tokens", "reasoning_format",
                       "response_format", "tools", "tool_choice"}
    assert not sent_by_options & set(plain) and plain["max_tokens"] == 50
    assert "max_tokens" not in unlimited and "tool_choice" not in unlimited  # no tools: no choice to send
    assert unlimited["logit_bias"] == [[1, -5]]


def test_stats_summary_and_damaged_stored_stats() -> None:
    stats = ReplyStats(ttft_s=0.042, thinking_n=840, thinking_s=12.2, decode_tps=760.0, predicted_n=1128,
                       finish_reason="stop")
    # One count, named: every token generated, thinking included; the normal end says nothing.
    assert stats.summary() == ("TTFT 42 ms · thought 840 tokens in 12 s · decode 760.0 tok/s · "
                               "1,128 tokens generated, thinking included")
    assert "thought 3 tokens in 0.4 s" in ReplyStats(thinking_n=3, thinking_s=0.41).summary()
    assert "in 2 min 5 s" in ReplyStats(thinking_n=3, thinking_s=125).summary()
    assert "thought 3 tokens in 12 s · answer after 12 s" in ReplyStats(thinking_n=3, thinking_s=12.1,
                                                                        answer_s=12.3).summary()
    cut = ReplyStats(predicted_n=8192, finish_reason="length", extra={"output_limit": 8192})
    assert cut.summary(with_reason=False) == "8,192 tokens generated · stopped at the output limit (8,192 tokens)"
    # The engine's reasons in words people read, not the API's.
    assert ReplyStats(finish_reason="length").summary() == "stopped at the output limit"
    assert ReplyStats(predicted_n=3, finish_reason="tool_calls").summary() == "3 tokens generated · called a tool"
    assert ReplyStats(finish_reason="stop").summary() == ""
    assert ReplyStats(finish_reason="eos_token").summary() == "eos_token"  # a server's own word, as sent
    assert ReplyStats.from_json(stats.to_json()) == stats
    damaged = ReplyStats.from_json({"thinking_n": "lots", "ttft_s": [1], "predicted_n": 7.0, "decode_tps": 3,
                                    "finish_reason": 5, "extra": "x", "answer_s": True, "unknown": 1})
    assert damaged == ReplyStats(predicted_n=7, decode_tps=3)
    assert ReplyStats.from_json("not a dict") == ReplyStats()  # type: ignore[arg-type]
    assert SamplingParams.from_json({"temperature": "hot", "top_k": 40}) == SamplingParams(top_k=40)


def test_no_slots_endpoint_means_no_progress() -> None:
    async def scenario(base: str) -> int | None:
        async with httpx.AsyncClient(trust_env=False) as http:
            return await ChatClient(http, base).decoded_tokens()

    with sse_server("ok") as (base, _):
        assert asyncio.run(scenario(base)) is None  # a server without /slots (remote engines)
    from tests.support.engines import free_port
    assert asyncio.run(scenario(f"http://127.0.0.1:{free_port()}")) is None  # nobody there


# -- the real engine -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def r1_server(test_engines: Engines, r1_model: Path) -> Iterator[str]:
    with _engines.running_server(test_engines.cpu_server, r1_model, extra=["-c", "2048", "-np", "1"]) as base:
        yield base


@pytest.fixture(scope="module")
def functionary_server(test_engines: Engines, functionary_model: Path) -> Iterator[str]:
    with _engines.running_server(test_engines.cpu_server, functionary_model, extra=["-c", "2048"]) as base:
        yield base


@pytest.mark.engine
def test_a_reasoning_template_streams_thinking(r1_server: str) -> None:
    """The R1 distill's prompt opens <think>; random weights never close it: every token is thinking."""
    pieces, reply = run_stream(r1_server, sampling=SamplingParams(max_tokens=24, seed=1))
    assert isinstance(reply, ChatReply)
    assert len(pieces) > 1 and {p.kind for p in pieces} == {THINKING}
    assert [p.tokens for p in pieces] == list(range(1, len(pieces) + 1))
    assert reply.text == "" and reply.thinking == "".join(p.text for p in pieces).strip()
    s = reply.stats
    assert s.ttft_s is not None and s.answer_s is None and s.thinking_s is not None
    assert s.thinking_n == len(pieces) and s.predicted_n == 24 and s.finish_reason == "length"
    assert f"thought {len(pieces)} tokens in" in s.summary()


@pytest.mark.engine
def test_the_original_api_on_a_reasoning_template_has_a_first_token(r1_server: str) -> None:
    """The bug this fixes: the answer is empty, but the reply is there and TTFT is known."""
    async def scenario() -> tuple[list[str], ChatReply]:
        deltas: list[str] = []
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await ChatClient(http, r1_server).stream_chat(HELLO, SamplingParams(max_tokens=8, seed=1),
                                                                   deltas.append)
        return deltas, reply

    deltas, reply = asyncio.run(scenario())
    assert deltas == [] and reply.text == "" and reply.thinking
    assert reply.stats.ttft_s is not None and reply.stats.thinking_n


@pytest.mark.engine
def test_thinking_off_answers_and_json_schema_output_checks(r1_server: str) -> None:
    plain_pieces, plain = run_stream(r1_server, options=RequestOptions(thinking=False, max_tokens=8),
                                     sampling=SamplingParams(seed=1))
    assert isinstance(plain, ChatReply) and plain.text and plain.thinking == ""
    assert {p.kind for p in plain_pieces} == {ANSWER} and plain.stats.thinking_n is None

    schema = {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["city", "n"], "additionalProperties": False}
    _, structured = run_stream(r1_server, options=RequestOptions(thinking=False, max_tokens=300,
                                                                 response_format=ResponseFormat(schema)),
                               sampling=SamplingParams(seed=2))
    assert isinstance(structured, ChatReply) and structured.stats.finish_reason == "stop"
    check = check_json(structured.text, schema)
    assert check.ok, check.summary()
    assert check.value["city"] in ("Paris", "Rome") and check.pretty.startswith("{\n  ")

    # Any JSON object: the grammar lets random weights open a string they never close, so the reply
    # may hit the limit; either way it is JSON from its first character (random text would not be).
    _, any_json = run_stream(r1_server, options=RequestOptions(thinking=False, max_tokens=100,
                                                               response_format=ResponseFormat()),
                             sampling=SamplingParams(seed=3))
    assert isinstance(any_json, ChatReply) and any_json.text.startswith("{")
    check = check_json(any_json.text)
    if any_json.stats.finish_reason == "stop":
        assert check.ok and isinstance(check.value, dict)
    else:
        assert any_json.stats.finish_reason == "length"
        assert check.problems == ("The reply ends before its JSON does (cut short?)",)


@pytest.mark.engine
def test_reasoning_format_none_is_split_here(r1_server: str) -> None:
    """With reasoning_format "none" the engine sends "<think>\\n…" as text; the client splits it."""
    pieces, reply = run_stream(r1_server, options=RequestOptions(reasoning_format="none", max_tokens=12),
                               sampling=SamplingParams(seed=1))
    assert isinstance(reply, ChatReply)
    assert {p.kind for p in pieces} == {THINKING} and reply.text == "" and reply.thinking
    _, raw = run_stream(r1_server, options=RequestOptions(reasoning_format="none", max_tokens=12,
                                                          split_thinking=False), sampling=SamplingParams(seed=1))
    assert isinstance(raw, ChatReply) and raw.text.startswith("<think>\n")
    assert raw.text.removeprefix("<think>\n").strip() == reply.thinking


@pytest.mark.engine
def test_decoded_tokens_reads_the_working_slot(r1_server: str) -> None:
    async def scenario() -> tuple[int, int | None]:
        async with httpx.AsyncClient(trust_env=False) as http:
            client = ChatClient(http, r1_server)
            assert await client.decoded_tokens() is None  # idle
            started = asyncio.Event()
            task = asyncio.create_task(client.stream(
                HELLO, options=RequestOptions(max_tokens=4000), on_piece=lambda p: started.set()))
            await started.wait()
            seen = None
            for _ in range(200):
                seen = await client.decoded_tokens()
                if seen:
                    break
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            after = 0
            for _ in range(200):  # the stop frees the slot a moment later
                after = await client.decoded_tokens()
                if after is None:
                    break
                await asyncio.sleep(0.02)
            assert seen is not None
            return seen, after

    seen, after = asyncio.run(scenario())
    assert seen >= 1 and after is None


@pytest.mark.engine
def test_a_forced_tool_call_comes_back_whole(functionary_server: str) -> None:
    options = RequestOptions(tools=[WEATHER_TOOL], tool_choice="required", max_tokens=1000, extra=ONLY_TOOL_CALLS)
    pieces, reply = run_stream(functionary_server, options=options, sampling=SamplingParams(seed=1))
    assert isinstance(reply, ChatReply), reply
    assert reply.stats.finish_reason == "tool_calls" and reply.tool_calls
    assert {p.kind for p in pieces} == {TOOL_CALL}
    for i, call in enumerate(reply.tool_calls):
        assert call.name == "get_weather" and call.id
        assert call.parsed_arguments()["city"] in ("Paris", "Rome")
        assert call.arguments == "".join(p.text for p in pieces if p.tool_index == i)
    assert reply.stats.answer_s is not None and reply.stats.ttft_s == reply.stats.answer_s


@pytest.mark.engine
def test_the_engines_format_failure_is_a_format_error_and_the_engine_serves_on(functionary_server: str) -> None:
    """Without tools, random text fails Functionary's chat format: llama-server sends
    ``data: {"error": {"code": 500, "message": "The model produced output that does not match the
    expected peg-native format", "type": "server_error"}}`` after the first chunk (and no [DONE])."""
    pieces, exc = run_stream(functionary_server, options=RequestOptions(max_tokens=20),
                             sampling=SamplingParams(seed=1))
    assert isinstance(exc, ChatFormatError) and not isinstance(exc, ServerError), exc
    assert "peg-native" in (exc.details or "")
    assert isinstance(exc.partial, ChatReply) and exc.partial.text == "".join(p.text for p in pieces)
    assert httpx.get(functionary_server + "/health").status_code == 200
    _, reply = run_stream(functionary_server, options=RequestOptions(tools=[WEATHER_TOOL], tool_choice="required",
                                                                     max_tokens=1000, extra=ONLY_TOOL_CALLS),
                          sampling=SamplingParams(seed=1))
    assert isinstance(reply, ChatReply) and reply.tool_calls  # same engine, next request fine
