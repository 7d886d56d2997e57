#!/usr/bin/env python3
"""Keep-alive visitors that ask once and then wait: the load bench/profile.sh --load http1k-idle.

Opens N connections to 127.0.0.1:PORT (TLS with the URL's host as SNI for https URLs, the
certificate unchecked), sends one GET for the URL's path on each, reads each whole response
(Content-Length), and holds every connection open and quiet for the given seconds before closing
them all. What a relay or an agent holds meanwhile is its memory per idle keep-alive visitor, as
browsers leave them between page loads. Prints how many answered and how long the asking took.

With --withhold-finished (https URLs; the load --load tls-stalled), each visitor instead runs its
side of the TLS handshake to the end and never sends its last flight (the client's Finished): the
server's handshake waits for it, as it does for every visitor of a burst between its flight and
the client's answer, and as a visitor that stalls on purpose makes it wait until its deadline.

    bench/lib/idle_visitors.py [--withhold-finished] URL CONNECTIONS SECONDS
"""
import socket
import ssl
import sys
import time
import urllib.parse


def read_response(conn, deadline):
    data = b""
    while b"\r\n\r\n" not in data:
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the head")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += chunk
    return head.split(b"\r\n")[0]


def withhold_finished(context, port, host, deadline):
    """A TCP connection whose TLS handshake waits at the server for the client's Finished."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
    while True:
        try:
            tls.do_handshake()
            return conn, tls  # the client's Finished stays in `outgoing`
        except ssl.SSLWantReadError:
            pass
        conn.sendall(outgoing.read())
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        incoming.write(chunk)


def main():
    args = sys.argv[1:]
    withhold = "--withhold-finished" in args
    args = [a for a in args if a != "--withhold-finished"]
    if len(args) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    url = urllib.parse.urlsplit(args[0])
    count, seconds = int(args[1]), float(args[2])
    if withhold and url.scheme != "https":
        sys.exit("--withhold-finished needs an https URL")
    context = None
    if url.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    request = (f"GET {url.path or '/'} HTTP/1.1\r\nHost: {url.hostname}\r\n\r\n").encode()
    conns, failed = [], 0
    start = time.monotonic()
    for _ in range(count):
        deadline = time.monotonic() + 10
        try:
            if withhold:
                conns.append(withhold_finished(context, url.port, url.hostname, deadline))
                continue
            conn = socket.create_connection(("127.0.0.1", url.port), timeout=10)
            if context:
                conn = context.wrap_socket(conn, server_hostname=url.hostname)
            conn.sendall(request)
            status = read_response(conn, deadline)
            if b" 200 " not in status:
                raise ConnectionError(status.decode(errors="replace"))
            conns.append(conn)
        except (OSError, ConnectionError) as e:
            failed += 1
            if failed <= 3:
                print(f"a visitor failed: {e}", file=sys.stderr)
    asked = time.monotonic() - start
    what = "TLS handshakes waiting for their Finished" if withhold else "keep-alive, asked once"
    print(f"{len(conns)} idle visitors ({what}; {failed} failed), set up in {asked:.1f} s,"
          f" held {seconds:g} s", flush=True)
    time.sleep(seconds)
    for conn in conns:
        (conn[0] if withhold else conn).close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
