"""A TCP proxy on 127.0.0.1 in front of a database server, for tests of a database that
stalls: while ``frozen`` it accepts connections and relays nothing either way (the server is
"up" but never answers); ``cut()`` closes every relayed connection. Threads only; every socket
is closed by ``close()`` (use it as a context manager)."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType


class StallingProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.frozen = threading.Event()
        self._closed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def freeze(self) -> None:
        self.frozen.set()

    def thaw(self) -> None:
        self.frozen.clear()

    def cut(self) -> None:
        """Close every connection relayed so far (new ones are still accepted)."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._sockets.append(client)
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        server: socket.socket | None = None
        try:
            while self.frozen.is_set() and not self._closed.is_set():
                self._closed.wait(0.1)  # accepted, silent: a stalled server
            server = socket.create_connection(self.upstream, timeout=5)
            with self._lock:
                self._sockets.append(server)
            peers = {client: server, server: client}
            while not self._closed.is_set():
                if self.frozen.is_set():
                    self._closed.wait(0.1)
                    continue
                ready, _, _ = select.select(list(peers), [], [], 0.1)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    peers[s].sendall(data)
        except (OSError, ValueError):  # ValueError: a socket the cut closed under select()
            return
        finally:
            for s in (client, server):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.cut()
        self._thread.join(5)

    def __enter__(self) -> StallingProxy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def via_proxy(url: str, proxy: StallingProxy) -> str:
    """``url`` with its host and port replaced by the proxy's."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(False)


def upstream_of(url: str) -> tuple[str, int]:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    default = 5432 if parsed.get_backend_name() == "postgresql" else 3306
    return parsed.host or "127.0.0.1", parsed.port or default
