"""A stdio MCP server written without the SDK, to misbehave in ways the SDK's own server never does.

Run as ``python tests/support/raw_mcp_server.py``. Tools: ``typed`` declares an output schema but
answers with text only; ``badbytes`` writes a line that is not UTF-8 to stdout before its answer;
``echo`` answers with its arguments. Imports nothing from Strata or the test suite.
"""

from __future__ import annotations

import json
import sys

OBJECT = {"type": "object"}
TOOLS = [
    {"name": "typed", "description": "Declares an output schema, answers with text only.", "inputSchema": OBJECT,
     "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "badbytes", "description": "Writes bytes that are not UTF-8, then answers.", "inputSchema": OBJECT},
    {"name": "echo", "description": "Answers with its arguments.", "inputSchema": OBJECT},
]


def answer(request_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        request_id, method = message.get("id"), message.get("method")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            answer(request_id, {"protocolVersion": message["params"]["protocolVersion"],
                                "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "badbytes":
                sys.stdout.buffer.write(b"\xff\xfe caf\xe9 (latin-1 debug output)\n")
                sys.stdout.buffer.flush()
            text = "the typed tool's text" if name == "typed" else json.dumps(message["params"].get("arguments"))
            answer(request_id, {"content": [{"type": "text", "text": text}], "isError": False})
        else:
            answer(request_id, {})


if __name__ == "__main__":
    main()
