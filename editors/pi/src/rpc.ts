// JSON-RPC 2.0 with LSP framing (Content-Length headers) over any duplex stream: the extension's
// connection to the daemon and the connections the daemon opens to the forwarding socket.

import type { Duplex } from "node:stream";

export type Params = unknown;
export type RequestHandler = (params: Params, id: number | string, signal: AbortSignal) => Promise<unknown>;

export class RpcError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** One peer: sends requests and notifications, answers requests through `handlers`. */
export class Connection {
  private buffer = Buffer.alloc(0);
  private nextId = 1;
  private readonly pending = new Map<number | string, Pending>();
  private readonly running = new Map<number | string, AbortController>();
  readonly handlers = new Map<string, RequestHandler>();
  readonly notifications = new Map<string, (params: Params) => void>();
  closed = false;

  constructor(private readonly stream: Duplex) {
    stream.on("data", (chunk: Buffer) => this.receive(chunk));
    const close = () => this.close(new Error("connection closed"));
    stream.on("close", close);
    stream.on("error", close);
  }

  request(method: string, params: Params, signal?: AbortSignal): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error("connection closed"));
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    signal?.addEventListener("abort", () => this.notify("$/cancelRequest", { id }), { once: true });
    this.send({ jsonrpc: "2.0", id, method, params });
    return answer;
  }

  notify(method: string, params: Params): void {
    if (!this.closed) this.send({ jsonrpc: "2.0", method, params });
  }

  close(reason: Error = new Error("connection closed")): void {
    if (this.closed) return;
    this.closed = true;
    for (const waiting of this.pending.values()) waiting.reject(reason);
    this.pending.clear();
    for (const controller of this.running.values()) controller.abort();
    this.stream.destroy();
  }

  private send(message: object): void {
    const body = Buffer.from(JSON.stringify(message), "utf8");
    this.stream.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, "ascii"), body]));
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const match = /content-length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString("ascii"));
      if (!match?.[1]) return this.close(new Error("bad framing"));
      const length = Number(match[1]);
      if (this.buffer.length < end + 4 + length) return;
      const body = this.buffer.subarray(end + 4, end + 4 + length).toString("utf8");
      this.buffer = this.buffer.subarray(end + 4 + length);
      this.dispatch(JSON.parse(body) as Record<string, unknown>);
    }
  }

  private dispatch(message: Record<string, unknown>): void {
    const id = message.id as number | string | undefined;
    if (typeof message.method !== "string") {
      const waiting = id === undefined ? undefined : this.pending.get(id);
      if (!waiting || id === undefined) return;
      this.pending.delete(id);
      const error = message.error as { message: string; code: number; data?: unknown } | undefined;
      if (error) waiting.reject(new RpcError(error.message, error.code, error.data));
      else waiting.resolve(message.result);
      return;
    }
    if (id === undefined) return this.onNotification(message.method, message.params);
    void this.answer(message.method, message.params, id);
  }

  private onNotification(method: string, params: Params): void {
    if (method === "$/cancelRequest") {
      this.running.get((params as { id: number | string }).id)?.abort();
      return;
    }
    this.notifications.get(method)?.(params);
  }

  private async answer(method: string, params: Params, id: number | string): Promise<void> {
    const handler = this.handlers.get(method);
    if (!handler) {
      this.send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
      return;
    }
    const controller = new AbortController();
    this.running.set(id, controller);
    try {
      const result = await handler(params, id, controller.signal);
      if (!this.closed) this.send({ jsonrpc: "2.0", id, result: result ?? null });
    } catch (error) {
      const rpc = error instanceof RpcError ? error : new RpcError(String(error), -32603);
      if (!this.closed) this.send({ jsonrpc: "2.0", id, error: { code: rpc.code, message: rpc.message, data: rpc.data } });
    } finally {
      this.running.delete(id);
    }
  }
}
