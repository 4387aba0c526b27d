"""The wire: LSP framing, stdio, the TCP/Unix/WebSocket listeners and who may connect."""
