"""The MCP host against real MCP servers (the official SDK's MCPServer) over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from strata_gui.core.base.errors import ToolError
from strata_gui.core.tools import (
    HTTP,
    STDIO,
    ApprovalRequest,
    Decision,
    McpHost,
    McpServerConfig,
    McpServerStore,
    ToolCatalog,
    ToolOutcome,
    ToolPolicy,
    openai_names,
    parse_mcp_servers,
)
from strata_gui.core.tools.host import result_text
from tests.support.mcp_servers import SCRIPT, hang_calls, http_server, stdio_entry
from tests.support.poll import until

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
Runner = Callable[[Coroutine[Any, Any, T]], T]


def _stdio(name: str = "tools", **extra: Any) -> McpServerConfig:
    (config,) = parse_mcp_servers({"mcpServers": {name: stdio_entry(**extra)}})
    return config


@pytest.fixture(params=["asyncio", "qasync"])
def run(request: pytest.FixtureRequest) -> Iterator[Runner[Any]]:
    """Runs a coroutine on a plain asyncio loop, or on the qasync loop the app uses."""
    if request.param == "asyncio":
        yield asyncio.run
        return
    loop: asyncio.AbstractEventLoop = request.getfixturevalue("qasync_loop")
    yield loop.run_until_complete


def _gone(pid: int) -> bool:
    try:
        psutil.Process(pid).wait(timeout=10)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


def test_lists_and_calls_over_stdio(run: Runner[Any], tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path)
        try:
            catalog = await host.list_tools()
            assert catalog.problems == ()
            assert [t.name for t in catalog.tools] == ["add", "echo", "fail", "crash", "hang", "env", "pid",
                                                       "write", "picture", "weather"]
            add = catalog.resolve("add")
            assert (add.server, add.description) == ("tools", "Add two integers.")
            assert add.to_openai() == {"type": "function", "function": {
                "name": "add", "description": "Add two integers.",
                "parameters": {"type": "object", "title": "addArguments", "required": ["a", "b"], "properties": {
                    "a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}}}}}
            assert catalog.openai_tools()[0] == add.to_openai()

            result = await host.call_tool("tools", "add", {"a": 2, "b": 40})
            assert (result.outcome, result.text, result.structured, result.is_error) == (
                ToolOutcome.OK, "42", {"result": 42}, False)
            assert result.duration_s > 0
            echoed = await host.call_tool("tools", "echo", {"text": "héllo\nworld"})
            assert echoed.text == "héllo\nworld"
            picture = await host.call_tool("tools", "picture")
            assert picture.text == "[image: image/png, 67 bytes]" and picture.outcome is ToolOutcome.OK

            failed = await host.call_tool("tools", "fail")
            assert failed.outcome is ToolOutcome.TOOL_ERROR and failed.is_error
            assert "the fail tool failed on purpose" in failed.text
            unknown = await host.call_tool("tools", "nope")
            assert unknown.outcome is ToolOutcome.TOOL_ERROR and "nope" in unknown.text
            wrong = await host.call_tool("tools", "add", {"a": "x"})
            assert wrong.outcome is ToolOutcome.TOOL_ERROR and "validation error" in wrong.text
            # The errors above did not cost the session: the same process answers.
            first = await host.call_tool("tools", "pid")
            assert (await host.call_tool("tools", "pid")).text == first.text
        finally:
            await host.aclose()

    run(main())


def test_concurrent_calls_share_one_start(tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path)
        try:
            results = await asyncio.gather(*(host.call_tool("tools", "pid") for _ in range(5)),
                                           *(host.call_tool("tools", "add", {"a": i, "b": 1}) for i in range(5)))
            assert len({r.text for r in results[:5]}) == 1  # one server process answered them all
            assert [r.text for r in results[5:]] == ["1", "2", "3", "4", "5"]
        finally:
            await host.aclose()

    asyncio.run(main())


def test_env_secrets_reach_the_server_and_long_output_is_cut(tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio(env={"STRATA_TEST_KEY": "sk-123"})], log_dir=tmp_path, max_result_chars=10)
        try:
            assert (await host.call_tool("tools", "env", {"name": "STRATA_TEST_KEY"})).text == "sk-123"
            long = await host.call_tool("tools", "echo", {"text": "x" * 25})
            assert long.text == "x" * 10 + "\n[… 15 more characters cut]"
        finally:
            await host.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_crash_is_reported_and_the_next_call_starts_the_server_again(run: Runner[Any], tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path)
        try:
            before = int((await host.call_tool("tools", "pid")).text)
            crashed = await host.call_tool("tools", "crash")
            assert crashed.outcome is ToolOutcome.CRASHED and crashed.is_error
            assert crashed.text == "The tool server 'tools' stopped during the call of 'crash'."
            assert "crash tool: exiting now" in crashed.details  # the server's last stderr line
            assert _gone(before)
            after = await host.call_tool("tools", "pid")
            assert after.outcome is ToolOutcome.OK and int(after.text) != before
            assert (await host.call_tool("tools", "add", {"a": 1, "b": 1})).text == "2"
        finally:
            await host.aclose()

    run(main())


def test_a_server_that_misbehaves_politely_is_answered_not_killed(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on its stdout made every call wait out its time limit (the SDK's
    reader stopped, the session stayed open); a result that does not match the tool's own output
    schema was reported as a crash and the server killed."""
    raw = REPO / "tests" / "support" / "raw_mcp_server.py"
    (config,) = parse_mcp_servers({"mcpServers": {"raw": {"command": sys.executable, "args": [str(raw)]}}})

    async def main() -> None:
        host = McpHost([config], log_dir=tmp_path)
        try:
            odd = await asyncio.wait_for(host.call_tool("raw", "badbytes", {"x": 1}), 20)
            assert odd.outcome is ToolOutcome.OK and json.loads(odd.text) == {"x": 1}
            typed = await host.call_tool("raw", "typed")
            assert typed.outcome is ToolOutcome.TOOL_ERROR and "output schema" in typed.text
            after = await host.call_tool("raw", "echo", {"y": 2})  # the same server, still running
            assert after.outcome is ToolOutcome.OK and json.loads(after.text) == {"y": 2}
        finally:
            await host.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_a_server_that_died_while_idle_is_started_again_for_the_next_call(tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path)
        try:
            before = int((await host.call_tool("tools", "pid")).text)
            os.kill(before, signal.SIGKILL)
            assert _gone(before)
            await asyncio.sleep(1.0)  # time for the SDK's reader to see the pipe close (it takes ms)
            after = await host.call_tool("tools", "pid")
            assert after.outcome is ToolOutcome.OK and int(after.text) != before
        finally:
            await host.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_hang_hits_the_time_limit_and_the_server_is_replaced(tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path, call_timeout=1.0)
        try:
            before = int((await host.call_tool("tools", "pid")).text)
            hung = await host.call_tool("tools", "hang")
            assert hung.outcome is ToolOutcome.TIMED_OUT
            assert hung.text == "The tool 'hang' of 'tools' did not finish within 1 s and was stopped."
            assert _gone(before)  # a server that hung may be wedged: it is stopped
            after = await host.call_tool("tools", "pid")
            assert after.outcome is ToolOutcome.OK and int(after.text) != before
            # A per-call limit overrides the host's.
            assert (await host.call_tool("tools", "hang", timeout=0.5)).outcome is ToolOutcome.TIMED_OUT
        finally:
            await host.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_cancelling_the_awaiting_task_cancels_the_call(run: Runner[Any], tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path, call_timeout=300)
        try:
            pid = (await host.call_tool("tools", "pid")).text
            call = asyncio.ensure_future(host.call_tool("tools", "hang"))
            await until(lambda: hang_calls(tmp_path) == 1)  # the call runs on the server
            assert not call.done()
            call.cancel()  # what the chat's Stop does
            with pytest.raises(asyncio.CancelledError):
                await call
            # The call is over (the SDK told the server), and the session is still good.
            assert (await host.call_tool("tools", "pid")).text == pid
            # Cancelled while the server is still starting: nothing is left half-started.
            host.set_servers([_stdio("other")])
            starting = asyncio.ensure_future(host.call_tool("other", "pid"))
            await asyncio.sleep(0.05)
            starting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await starting
            assert (await host.call_tool("other", "add", {"a": 1, "b": 2})).text == "3"
            # Two calls wait for one start; the first is stopped, the second still gets its answer.
            host.set_servers([_stdio("third")])
            first = asyncio.ensure_future(host.call_tool("third", "pid"))
            second = asyncio.ensure_future(host.call_tool("third", "add", {"a": 2, "b": 2}))
            await asyncio.sleep(0.05)
            first.cancel()
            assert (await second).text == "4"
            with pytest.raises(asyncio.CancelledError):
                await first
        finally:
            await host.aclose()

    run(main())


def test_streamable_http_with_a_header_kept_as_a_secret(run: Runner[Any], tmp_path: Path) -> None:
    async def main(url: str) -> None:
        store = McpServerStore(tmp_path / "mcp_servers.json", _DictSecrets())
        store.add(McpServerConfig("remote", HTTP, url=url, headers={"X-Api-Key": "k-123"}))
        store.add(McpServerConfig("no-key", HTTP, url=url))
        assert "k-123" not in store.path.read_text(encoding="utf-8")
        host = McpHost(store.servers(), call_timeout=1.0)
        try:
            catalog = await host.list_tools()
            assert {t.server for t in catalog.tools} == {"remote"}
            (problem,) = catalog.problems
            assert problem.server == "no-key"
            assert problem.error.message == "The tool server 'no-key' refused the connection (HTTP 401)."
            assert "API key" in (problem.error.hint or "")
            assert (await host.call_tool("remote", "add", {"a": 20, "b": 22})).text == "42"
            assert (await host.call_tool("remote", "fail")).outcome is ToolOutcome.TOOL_ERROR
            assert (await host.call_tool("remote", "hang")).outcome is ToolOutcome.TIMED_OUT
            assert (await host.call_tool("remote", "echo", {"text": "again"})).text == "again"
            refused = await host.call_tool("no-key", "add", {"a": 1, "b": 1})
            assert refused.outcome is ToolOutcome.UNAVAILABLE and "HTTP 401" in refused.text
        finally:
            await host.aclose()

    with http_server(require_header="X-Api-Key=k-123") as url:
        run(main(url))


class _DictSecrets:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def set(self, name: str, value: str) -> None:
        self.values[name] = value

    def delete(self, name: str) -> None:
        self.values.pop(name, None)


def test_servers_that_cannot_start_are_reported_and_the_others_still_work(tmp_path: Path) -> None:
    quitter = McpServerConfig("quitter", STDIO, command=sys.executable, args=(
        "-c", "import os, sys; sys.stderr.write('boom: ' + os.environ['BRAVE_API_KEY'] + ' is refused\\n'); sys.exit(2)"),
        env={"BRAVE_API_KEY": "BSA-quit-secret"})
    missing = McpServerConfig("missing", STDIO, command="strata-no-such-program-xyz")
    npx = McpServerConfig("npx-less", STDIO, command="npx", env={"PATH": str(tmp_path)})
    lost = McpServerConfig("lost", STDIO, command=sys.executable, cwd=str(tmp_path / "nowhere"))
    off = _stdio("off", disabled=True)
    closed = McpServerConfig("closed-port", HTTP, url="http://127.0.0.1:9/mcp")

    async def main() -> None:
        host = McpHost([_stdio(), quitter, missing, npx, lost, off, closed], log_dir=tmp_path)
        try:
            catalog = await host.list_tools()
            assert {t.server for t in catalog.tools} == {"tools"}
            problems = {p.server: p.error for p in catalog.problems}
            assert set(problems) == {"quitter", "missing", "npx-less", "lost", "closed-port"}  # "off" is off
            assert problems["quitter"].message == (
                "The tool server 'quitter' stopped while starting: boom: *** is refused")  # the key is hidden
            assert "BSA-quit-secret" not in (problems["quitter"].details or "")
            assert problems["missing"].message == (
                "The program 'strata-no-such-program-xyz' of the tool server 'missing' was not found.")
            assert "Node.js" in (problems["npx-less"].hint or "")
            assert "does not exist" in problems["lost"].message
            assert problems["closed-port"].message.startswith("Could not reach the tool server 'closed-port'")

            result = await host.call_tool("quitter", "anything")
            assert result.outcome is ToolOutcome.UNAVAILABLE and "boom" in result.text
            assert (await host.call_tool("off", "add")).outcome is ToolOutcome.UNAVAILABLE
            unknown = await host.call_tool("nobody", "add")
            assert unknown.outcome is ToolOutcome.UNAVAILABLE and "no tool server named 'nobody'" in unknown.text
            assert (await host.call_tool("tools", "add", {"a": 1, "b": 2})).text == "3"
            assert "boom: BSA-quit-secret is refused" in (tmp_path / "mcp-quitter.log").read_text(encoding="utf-8")
        finally:
            await host.aclose()

    asyncio.run(main())


def test_run_call_asks_first_and_never_runs_a_denied_call(tmp_path: Path) -> None:
    out = tmp_path / "written.txt"
    asked: list[ApprovalRequest] = []
    answers: list[Decision] = []

    async def approver(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return answers.pop(0)

    async def main() -> None:
        store = McpServerStore(tmp_path / "mcp_servers.json", _DictSecrets())
        store.add(_stdio())
        host = McpHost(store.servers(), log_dir=tmp_path)
        policy = ToolPolicy(store)
        try:
            catalog = await host.list_tools()
            args = json.dumps({"path": str(out), "text": "hi"})

            answers.append(Decision.DENY)
            denied = await host.run_call(catalog, "write", args, policy=policy, approver=approver)
            assert denied.outcome is ToolOutcome.DENIED and not out.exists()
            assert asked[-1] == ApprovalRequest("tools", "write", catalog.resolve("write").description,
                                                {"path": str(out), "text": "hi"}, offered_by=("tools",))

            answers.append(Decision.ALLOW_ONCE)
            once = await host.run_call(catalog, "write", args, policy=policy, approver=approver)
            assert once.outcome is ToolOutcome.OK and out.read_text(encoding="utf-8") == "hi"

            answers.append(Decision.ALWAYS)
            await host.run_call(catalog, "add", '{"a": 1, "b": 2}', policy=policy, approver=approver)
            again = await host.run_call(catalog, "add", {"a": 2, "b": 2}, policy=policy, approver=approver)
            assert again.text == "4" and len(asked) == 3  # not asked the second time
            assert store.always_allowed() == {"tools": ["add"]}

            # The model's mistakes are results too, and nobody is asked about them.
            bad = await host.run_call(catalog, "add", "{not json", policy=policy, approver=approver)
            assert bad.outcome is ToolOutcome.BAD_ARGUMENTS and "not valid JSON" in bad.text
            listed = await host.run_call(catalog, "add", "[1, 2]", policy=policy, approver=approver)
            assert listed.outcome is ToolOutcome.BAD_ARGUMENTS
            ghost = await host.run_call(catalog, "rm_rf", "{}", policy=policy, approver=approver)
            assert ghost.outcome is ToolOutcome.UNKNOWN_TOOL and ghost.text == "There is no tool named 'rm_rf'."
            assert len(asked) == 3
        finally:
            await host.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_removed_and_changed_servers_are_stopped(tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio("a"), _stdio("b")], log_dir=tmp_path)
        try:
            pid_a = int((await host.call_tool("a", "pid")).text)
            pid_b = int((await host.call_tool("b", "pid")).text)
            host.set_servers([_stdio("b", env={"CHANGED": "1"})])
            await asyncio.sleep(0)
            assert (await host.call_tool("a", "pid")).outcome is ToolOutcome.UNAVAILABLE
            assert (await host.call_tool("b", "env", {"name": "CHANGED"})).text == "1"  # restarted with it
            assert _gone(pid_a) and _gone(pid_b)
            with pytest.raises(ToolError):
                host.set_servers([_stdio("b"), _stdio("b")])
        finally:
            await host.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_aclose_cancels_running_calls_and_the_host_can_start_again(tmp_path: Path) -> None:
    async def main() -> None:
        host = McpHost([_stdio()], log_dir=tmp_path, call_timeout=300)
        pid = int((await host.call_tool("tools", "pid")).text)
        call = asyncio.ensure_future(host.call_tool("tools", "hang"))
        await until(lambda: hang_calls(tmp_path) == 1)  # the call runs on the server
        await host.aclose()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert _gone(pid)
        try:
            assert (await host.call_tool("tools", "add", {"a": 1, "b": 1})).text == "2"
        finally:
            await host.aclose()

    asyncio.run(main())


APP = textwrap.dedent("""
    import asyncio, sys
    from strata_gui.core.tools import McpHost, McpServerConfig
    async def main():
        host = McpHost([McpServerConfig("s", "stdio", command=sys.executable,
                                        args=(sys.argv[1], "stdio", "--linger"))],
                       guard_children=sys.argv[2] == "guarded")
        print((await host.call_tool("s", "pid")).text, flush=True)
        await asyncio.sleep(3600)
    asyncio.run(main())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("setpriv") is None,
                    reason="setpriv --pdeathsig is Linux's (util-linux)")
@pytest.mark.slow
def test_a_stdio_server_dies_with_a_killed_app() -> None:
    def server_of_killed_app(mode: str) -> int:
        app = subprocess.Popen([sys.executable, "-c", APP, str(SCRIPT), mode], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
        try:
            assert app.stdout is not None
            pid = int(app.stdout.readline())
        finally:
            app.send_signal(signal.SIGKILL)
            app.wait()
            if app.stdout is not None:
                app.stdout.close()
        return pid

    pid = server_of_killed_app("guarded")
    assert _gone(pid)
    # The same server without the guard outlives the app (it ignores its closed stdin): the check above
    # can fail.
    pid = server_of_killed_app("unguarded")
    try:
        assert psutil.Process(pid).is_running() and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    finally:
        os.kill(pid, signal.SIGKILL)
        _gone(pid)


def test_openai_names_are_unique_safe_and_short() -> None:
    assert openai_names([("a", "search"), ("b", "read")]) == ["search", "read"]
    assert openai_names([("files", "search"), ("web", "search")]) == ["files__search", "web__search"]
    assert openai_names([("x", "get weather!"), ("y", "名前")]) == ["get_weather", "tool"]
    long = openai_names([("s", "t" * 100), ("s2", "t" * 100)])
    assert all(len(n) <= 64 for n in long) and len(set(long)) == 2
    # Cleaning can make two different names equal: they are still told apart.
    names = openai_names([("a", "a-b"), ("a", "a b"), ("a__a", "b")])
    assert len(set(names)) == 3 and all(n.replace("_", "").replace("-", "").isalnum() for n in names)


def test_catalog_resolves_only_known_names() -> None:
    with pytest.raises(ToolError) as info:
        ToolCatalog().resolve("x")
    assert info.value.message == "There is no tool named 'x'."
    assert ToolCatalog().openai_tools() == []


def test_result_text_of_every_content_kind() -> None:
    from mcp_types import (
        BlobResourceContents,
        EmbeddedResource,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    blocks = [
        TextContent(type="text", text="one"),
        EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///a.txt", text="two")),
        EmbeddedResource(type="resource", resource=BlobResourceContents(uri="file:///b.bin", blob="AAAA",
                                                                        mime_type="application/octet-stream")),
        ResourceLink(type="resource_link", name="c", uri="file:///c"),
    ]
    assert result_text(blocks) == ("one\ntwo\n[resource file:///b.bin: application/octet-stream, 3 bytes]\n"
                                   "[resource link: c file:///c]")
    assert result_text([], {"answer": 42}) == '{"answer": 42}'




def test_the_app_core_runs_the_saved_servers_and_follows_the_store(tmp_path: Path) -> None:
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.config.services import build_services

    async def main() -> None:
        app = build_app_services(build_services())
        try:
            assert await app.tools.list_tools() == ToolCatalog()  # nothing saved: nothing started
            app.tool_servers.add(_stdio("saved", env={"STRATA_TEST_KEY": "from-the-key-store"}))
            result = await app.tools.call_tool("saved", "env", {"name": "STRATA_TEST_KEY"})
            assert result.text == "from-the-key-store"
            pid = int((await app.tools.call_tool("saved", "pid")).text)
            app.tool_servers.set_enabled("saved", False)
            assert (await app.tools.call_tool("saved", "pid")).outcome is ToolOutcome.UNAVAILABLE
            assert _gone(pid)
        finally:
            await app.aclose()

    asyncio.run(main())


def test_secrets_stay_out_of_the_log_even_when_verbose(tmp_path: Path) -> None:
    from strata_gui.core.platform.logging_setup import close_logging, configure_logging

    log_file = tmp_path / "logs" / "strata.log"

    async def main(url: str) -> None:
        host = McpHost([McpServerConfig("remote", HTTP, url=url + "?token=q-secret",
                                        headers={"X-Api-Key": "h-secret"}),
                        _stdio("local", env={"STRATA_TEST_KEY": "e-secret"})], log_dir=tmp_path / "logs")
        try:
            assert (await host.call_tool("remote", "add", {"a": 1, "b": 2})).text == "3"
            assert (await host.call_tool("local", "env", {"name": "STRATA_TEST_KEY"})).text == "e-secret"
            assert (await host.call_tool("remote", "crash")).outcome is ToolOutcome.CRASHED  # errors logged too
        finally:
            await host.aclose()

    configure_logging(log_file, verbose=True)
    try:
        with http_server(require_header="X-Api-Key=h-secret") as url:
            asyncio.run(main(url))
    finally:
        close_logging()
    text = log_file.read_text(encoding="utf-8")
    assert "starting tool server local" in text and "connecting to tool server remote" in text
    for secret in ("q-secret", "h-secret", "e-secret"):
        assert secret not in text
