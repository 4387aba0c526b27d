"""An agent that keeps its conversation in pi-sessiond: a complete example (standard library only).

The loop, once per step:

1. ``pi/getContext {format: "openai", waitForCompaction: true}``: the messages to send,
   as the provider takes them, never over the window (``tokens``, ``contextWindow``);
2. send them to the model (any OpenAI Chat Completions endpoint);
3. on a context-length error: ``pi/reportOverflow``, then send again (once);
4. ``pi/append`` the answer and the tool result, each under an id of our own, so a
   request that may or may not have landed (a crash, a lost reply) is simply sent again.

Run it against the loopback model of the test suite (the model in one terminal: it prints its
URL and serves until Ctrl-C; the agent in another)::

    python -m tests.loopback_provider --mode tool_only --window agent-model=24000
    python examples/agent/agent.py --model-url URL --steps 300 --window 24000

or against a daemon you share with other clients: ``--unix PATH`` (``pi-sessiond serve --unix PATH``).
The daemon starts as ``pi-sessiond serve`` on stdio unless ``--unix`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from typing import IO, Any

Json = dict[str, Any]


class RpcError(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and ``data.reason``."""

    def __init__(self, error: Json) -> None:
        super().__init__(f"{error.get('message')} ({(error.get('data') or {}).get('reason')})")
        self.code, self.reason = error.get("code"), (error.get("data") or {}).get("reason")


class Daemon:
    """A JSON-RPC client of pi-sessiond over LSP framing (stdio of a child, or a Unix socket)."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes], closer: Any = None) -> None:
        self._reader, self._writer, self._closer = reader, writer, closer
        self._next = 0
        self.notifications: list[tuple[str, Json]] = []

    @classmethod
    def spawn(cls, command: list[str]) -> Daemon:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        return cls(proc.stdout, proc.stdin, proc)

    @classmethod
    def connect(cls, path: str) -> Daemon:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)
        return cls(sock.makefile("rb"), sock.makefile("wb"), sock)

    def send(self, method: str, params: Any, *, notify: bool = False) -> int:
        self._next += 1
        message: Json = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            message["id"] = self._next
        body = json.dumps(message).encode()
        self._writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        self._writer.flush()
        return self._next

    def reply(self, msg_id: int) -> Any:
        """Read until the answer to ``msg_id``; notifications are kept, requests to us answered ``null``."""
        while True:
            message = self._read()
            if "method" in message and "id" in message:
                self._answer(message["id"])
            elif "method" in message:
                self.notifications.append((message["method"], message.get("params") or {}))
            elif message.get("id") == msg_id:
                if "error" in message:
                    raise RpcError(message["error"])
                return message.get("result")

    def call(self, method: str, params: Any) -> Any:
        return self.reply(self.send(method, params))

    def initialize(self, settings: Json) -> None:
        self.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                 "initializationOptions": {"settings": settings}})
        self.send("initialized", {}, notify=True)

    def close(self) -> None:
        try:
            self.call("shutdown", None)
            self.send("exit", None, notify=True)
        except (OSError, ConnectionError, EOFError):
            pass
        if isinstance(self._closer, subprocess.Popen):
            self._closer.wait(30)
        elif self._closer is not None:
            self._closer.close()

    def _read(self) -> Json:
        length = None
        while (line := self._reader.readline()) not in (b"\r\n", b"\n"):
            if not line:
                raise EOFError("the daemon closed the connection")
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        message: Json = json.loads(self._reader.read(length))
        return message

    def _answer(self, msg_id: Any) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": None}).encode()
        self._writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        self._writer.flush()


class ContextTooLong(Exception):
    """The model refused the prompt as longer than its window."""


def ask_model(url: str, model: str, messages: list[Json]) -> Json:
    """One Chat Completions request; the answer's message and usage."""
    body = json.dumps({"model": model, "messages": messages, "tools": [TOOL]}).encode()
    request = urllib.request.Request(url + "/v1/chat/completions", body, {"content-type": "application/json",
                                                                          "authorization": "Bearer none"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            answer: Json = json.load(response)
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        if exc.code == 400 and "context_length_exceeded" in text:
            raise ContextTooLong(text) from None
        raise
    return answer


TOOL = {"type": "function", "function": {"name": "read", "description": "Read a file",
                                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}


def assistant_message(answer: Json, with_usage: bool) -> Json:
    """The model's answer as Pi's assistant message (text, tool calls, optionally usage)."""
    choice = answer["choices"][0]["message"]
    content: list[Json] = [{"type": "text", "text": choice["content"]}] if choice.get("content") else []
    for call in choice.get("tool_calls") or []:
        content.append({"type": "toolCall", "id": call["id"], "name": call["function"]["name"],
                        "arguments": json.loads(call["function"]["arguments"] or "{}")})
    message: Json = {"role": "assistant", "content": content, "model": answer.get("model"),
                     "stopReason": "toolUse" if choice.get("tool_calls") else "stop"}
    if with_usage and answer.get("usage"):
        used = answer["usage"]
        message["usage"] = {"input": used["prompt_tokens"], "output": used["completion_tokens"], "cacheRead": 0,
                            "cacheWrite": 0, "totalTokens": used["total_tokens"]}
    return message


def run_tool(call: Json, step: int, size: int) -> Json:
    """A deterministic stand-in for a real tool: a large file listing that names its step."""
    line = f"step {step}: {call['arguments'].get('path', '?')} line "
    text = "".join(f"{line}{n}\n" for n in range(size // (len(line) + 4)))
    return {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
            "content": [{"type": "text", "text": text}], "isError": False}


class Agent:
    """The loop of the module docstring over one session; counts what a test checks."""

    def __init__(self, daemon: Daemon, session_id: str, *, model_url: str, model: str = "agent-model",
                 with_usage: bool = True, tool_chars: int = 6000, name: str = "agent") -> None:
        self.daemon, self.session_id = daemon, session_id
        self.model_url, self.model, self.with_usage, self.tool_chars, self.name = (
            model_url, model, with_usage, tool_chars, name)
        self.acknowledged: list[str] = []
        self.largest_context = 0
        self.window = 0
        self.overflows = self.recovered = 0

    def append(self, entries: list[Json]) -> list[str]:
        ids: list[str] = self.daemon.call("pi/append", {"sessionId": self.session_id, "entries": entries})["ids"]
        self.acknowledged += ids
        return ids

    def say(self, text: str, step: int) -> None:
        message = {"role": "user", "content": text}
        self.append([{"type": "message", "id": f"{self.name}-{step}-u", "message": message}])

    def context(self) -> Json:
        context: Json = self.daemon.call("pi/getContext", {"sessionId": self.session_id, "format": "openai",
                                                           "waitForCompaction": True})
        self.largest_context = max(self.largest_context, context["tokens"])
        self.window = context["contextWindow"]
        return context

    def think(self) -> Json:
        """Ask the model; on a context-length error, report it and ask once more."""
        try:
            return ask_model(self.model_url, self.model, self.context()["messages"])
        except ContextTooLong:
            self.overflows += 1
        self.daemon.call("pi/reportOverflow", {"sessionId": self.session_id})
        answer = ask_model(self.model_url, self.model, self.context()["messages"])
        self.recovered += 1
        return answer

    def entries_of(self, step: int, answer: Json) -> list[Json]:
        message = assistant_message(answer, self.with_usage)
        entries = [{"type": "message", "id": f"{self.name}-{step}-a", "message": message}]
        for n, block in enumerate(b for b in message["content"] if b["type"] == "toolCall"):
            result = run_tool(block, step, self.tool_chars)
            entries.append({"type": "message", "id": f"{self.name}-{step}-t{n}", "message": result})
        return entries

    def step(self, step: int) -> list[str]:
        return self.append(self.entries_of(step, self.think()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-url", required=True, help="base URL of an OpenAI-compatible endpoint")
    parser.add_argument("--model", default="agent-model")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--window", type=int, default=24000, help="the model's context window (tokens)")
    parser.add_argument("--unix", help="a shared daemon's socket (default: start one on stdio)")
    parser.add_argument("--cwd", default=".", help="the project the session belongs to")
    parser.add_argument("--no-usage", action="store_true", help="append answers without usage")
    args = parser.parse_args(argv)
    daemon = Daemon.connect(args.unix) if args.unix else Daemon.spawn([sys.executable, "-m", "pi_sessiond", "serve"])
    daemon.initialize({"contextWindow": args.window})
    session = daemon.call("pi/createSession", {"cwd": os.path.abspath(args.cwd)})
    agent = Agent(daemon, session["sessionId"], model_url=args.model_url, model=args.model,
                  with_usage=not args.no_usage)
    agent.say("Read the files one by one. Remember: the deploy code word is HERON-7.", 0)
    for step in range(1, args.steps + 1):
        agent.step(step)
    print(json.dumps({"session": session["path"], "steps": args.steps, "entries": len(agent.acknowledged),
                      "largestContext": agent.largest_context, "window": agent.window,
                      "overflows": agent.overflows, "recovered": agent.recovered}))
    daemon.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
