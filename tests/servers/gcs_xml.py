"""A loopback shim in front of fake-gcs-server for object_store (delta-rs, obstore), which writes through GCS's XML
API: ``PUT /<bucket>/<object>``. Upstream fake-gcs-server serves that route only for signed URLs, so the shim turns
each such PUT into the JSON API's equivalent — a media upload, with ``x-goog-if-generation-match`` as
``ifGenerationMatch`` (so conditional creates are the server's own) — and returns the XML API's headers (ETag,
x-goog-generation). Its XML listing ignores ``start-after`` (which delta-rs uses to list the log after a version):
the shim filters the listing instead. Everything else (GET, HEAD, DELETE) is passed through unchanged. (object_store's
own CI uses a fork of fake-gcs-server that does the same server-side.)"""

from __future__ import annotations

import http.client
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from tests.servers.process import HOST, Server, ServerError


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream_port = 0

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def _forward(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> None:
        conn = http.client.HTTPConnection(HOST, self.upstream_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            # A HEAD answer's Content-Length is the object's size: kept; otherwise the body's length is sent below.
            out_headers = {k: v for k, v in resp.getheaders()
                           if k.lower() not in ("transfer-encoding", "connection")
                           and (k.lower() != "content-length" or method == "HEAD")}
            status = resp.status
        finally:
            conn.close()
        if self._after is not None and status == 200:
            data = self._filter_listing(data)
        if method == "POST" and path.startswith("/upload/") and status == 200:
            meta = json.loads(data or b"{}")
            out_headers["ETag"] = str(meta.get("etag") or meta.get("md5Hash") or "")
            out_headers["x-goog-generation"] = str(meta.get("generation", ""))
            data = b""
        self.send_response(status)
        for k, v in out_headers.items():
            self.send_header(k, v)
        if method != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")  # one request per connection: nothing left over between requests
        self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _headers(self) -> dict[str, str]:
        return {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}

    def do_PUT(self) -> None:
        url = urlsplit(self.path)
        parts = url.path.lstrip("/").split("/", 1)
        body = self._body() or b""
        if len(parts) == 2 and parts[1] and not url.query and "x-goog-copy-source" not in self.headers:
            bucket, name = parts
            from urllib.parse import unquote

            query = f"uploadType=media&name={quote(unquote(name), safe='')}"
            match = self.headers.get("x-goog-if-generation-match")
            if match is not None:
                query += f"&ifGenerationMatch={match}"
            headers = {"Content-Type": self.headers.get("Content-Type", "application/octet-stream")}
            self._forward("POST", f"/upload/storage/v1/b/{bucket}/o?{query}", body, headers)
            return
        self._forward("PUT", self.path, body, self._headers())

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if "list-type" in query and "start-after" in query:
            # The XML listing ignores start-after: drop it upstream, filter the answer here (keys after it only).
            self._after = query.pop("start-after")[0]
            self._forward("GET", f"{url.path}?{urlencode(query, doseq=True)}", None, self._headers())
            return
        self._forward("GET", self.path, None, self._headers())

    _after: str | None = None

    def _filter_listing(self, data: bytes) -> bytes:
        import xml.etree.ElementTree as ET

        root = ET.fromstring(data)
        for contents in list(root.iter("Contents")):
            key = contents.findtext("Key") or ""
            if key <= (self._after or ""):
                root.remove(contents)
        count = root.find("KeyCount")
        if count is not None:
            count.text = str(len(list(root.iter("Contents"))))
        return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root)

    def do_HEAD(self) -> None:
        self._forward("HEAD", self.path, None, self._headers())

    def do_DELETE(self) -> None:
        self._forward("DELETE", self.path, None, self._headers())

    def do_POST(self) -> None:
        self._forward("POST", self.path, self._body(), self._headers())


class XmlShim:
    """The shim in a child process (delta-rs's file-system handler keeps the GIL while it waits for an answer, so a
    server thread in the test process could never answer it), on a free loopback port."""

    def __init__(self, upstream_port: int, log: Path) -> None:
        self.server = Server("gcs-xml-shim", [sys.executable, "-m", "tests.servers.gcs_xml", str(upstream_port)], log,
                             cwd=Path(__file__).resolve().parents[2])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.server.tail()
            if text.startswith("port "):
                self.port = int(text.split()[1])
                return
            time.sleep(0.1)
        self.server.stop()
        raise ServerError(f"the GCS XML shim did not start: {self.server.tail()}")

    def stop(self) -> None:
        self.server.stop()


def main() -> None:
    handler = type("Handler", (_Handler,), {"upstream_port": int(sys.argv[1])})
    httpd = ThreadingHTTPServer((HOST, 0), handler)
    print(f"port {httpd.server_address[1]}", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
