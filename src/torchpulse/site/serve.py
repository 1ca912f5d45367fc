"""Serve the published site over HTTP (asv's pages need HTTP; file:// does not work), bound
to loopback unless asked otherwise (``asv preview`` listens on every interface).

Only regular files inside the site are served: no folder listings, no link that leads out
of it, no FIFO or device (which would block a worker), no path with a NUL byte; at most
MAX_CONNECTIONS connections are served at once, and a connection that has not sent a whole
request head within HEAD_SECONDS (idle, or a client sending a byte now and then) is closed."""

from __future__ import annotations

import functools
import ipaddress
import os
import queue
import socket
import socketserver
import sys
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.text import one_line

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
MAX_CONNECTIONS = 32
IDLE_SECONDS = 30.0
HEAD_SECONDS = 30.0  # for a request line and its headers, however slowly they come
LOG_LINES = 1000  # log lines waiting for stderr at most


class ServeError(TorchpulseError, RuntimeError):
    """No site to serve, or the address cannot be bound."""


class _Log:
    """The server's log lines, written to stderr by a thread of their own: a worker never
    waits on stderr (a pipe nobody reads blocked every worker, and the server with them).
    Lines past a full queue are dropped and counted, and the count said when it drains."""

    def __init__(self, size: int = LOG_LINES) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue(size)
        self._dropped = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._write, name="torchpulse-serve-log", daemon=True).start()

    def say(self, line: str) -> None:
        try:
            self._lines.put_nowait(one_line(line))
        except queue.Full:
            with self._lock:
                self._dropped += 1

    def close(self) -> None:
        """The thread ends once the lines before this are written (or, stderr blocked,
        with the process: it is a daemon)."""
        try:
            self._lines.put_nowait(None)
        except queue.Full:
            pass

    def _write(self) -> None:
        while True:
            line = self._lines.get()
            if line is None:
                return
            with self._lock:
                dropped, self._dropped = self._dropped, 0
            try:
                if dropped:
                    sys.stderr.write(f"({dropped} log line(s) dropped: stderr was not read)\n")
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # stderr closed: the lines have nowhere to go
                pass


class _Handler(SimpleHTTPRequestHandler):
    timeout = IDLE_SECONDS  # an idle keep-alive connection is closed, not held forever

    def log_message(self, format: str, *args: object) -> None:
        # the request line is the client's: no control character reaches the terminal
        self.server.log.say(f"{self.address_string()} {format % args}")

    def handle_one_request(self) -> None:
        # the socket's timeout restarts with every byte: a deadline for the whole head
        # keeps a client that sends one byte now and then from holding a slot for good
        watchdog = threading.Timer(HEAD_SECONDS, self._cut)
        watchdog.daemon = True
        self._watchdog = watchdog
        watchdog.start()
        try:
            super().handle_one_request()
        finally:
            watchdog.cancel()

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # reads the headers
        self._watchdog.cancel()  # the head is in: the rest is the server's own pace
        return parsed

    def _cut(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # closed meanwhile

    def send_head(self):  # noqa: ANN201 (http.server's signature)
        path = self.translate_path(self.path)
        root = os.path.realpath(self.directory)
        if "\x00" in path or not _within(os.path.realpath(path), root):
            self.send_error(404, "File not found")
            return None
        if os.path.isdir(path):
            if not os.path.isfile(os.path.join(path, "index.html")):
                self.send_error(404, "File not found")  # no folder listings
                return None
        elif os.path.exists(path) and not os.path.isfile(path):
            self.send_error(404, "File not found")  # a FIFO or device would block here
            return None
        return super().send_head()

    def list_directory(self, path):  # noqa: ANN001, ANN201
        self.send_error(404, "File not found")
        return None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # Ctrl-C does not wait for open keep-alive connections

    def __init__(self, address: tuple[str, int], handler: Callable[..., object]) -> None:
        self.address_family = _family(address[0])
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.log = _Log()
        super().__init__(address, handler)

    def server_close(self) -> None:
        super().server_close()
        self.log.close()

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        """One line, or none for a client that went away (reset, closed early): socketserver
        printed a 23-line traceback for each."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            return
        self.log.say(f"{client_address[0]} error: {type(error).__name__}: {error}")

    def process_request(self, request, client_address) -> None:  # noqa: ANN001
        self._slots.acquire()  # the accept loop waits while every slot is busy
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:  # noqa: ANN001
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN, which can stall without DNS
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), \
            int(self.server_address[1])


def url_of(host: str, port: int) -> str:
    try:
        bracket = ipaddress.ip_address(host).version == 6
    except ValueError:  # a host name
        bracket = False
    return f"http://[{host}]:{port}/" if bracket else f"http://{host}:{port}/"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def make_server(html_dir: Path, host: str = DEFAULT_HOST,
                port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """A server for ``html_dir`` (port 0 picks a free one; read it from server_address)."""
    if not (html_dir / "index.html").is_file():
        raise ServeError(f"{html_dir}: no published site (run `torchpulse publish` first)")
    handler = functools.partial(_Handler, directory=str(html_dir))
    try:
        return _Server((host, port), handler)
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None


def _family(host: str) -> int:
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return socket.AF_INET


def serve(html_dir: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          announce: Callable[[str], None] = print) -> None:
    """Serve until interrupted (the KeyboardInterrupt goes on: the command exits 130);
    ``announce`` gets the URL once the socket listens."""
    server = make_server(html_dir, host, port)
    with server:
        bound_port = server.server_address[1]
        announce(f"serving {html_dir} at {url_of(host, bound_port)} (Ctrl-C stops)")
        if not is_loopback(host):
            announce(f"note: {host} is not a loopback address; other machines can reach it")
        server.serve_forever()
