"""A stock pygls language server on stdio: the start-time baseline of ``bench_scale.py``."""

from pygls.lsp.server import LanguageServer

server = LanguageServer("stock", "v1")

if __name__ == "__main__":
    server.start_io()
