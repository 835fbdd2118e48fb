# A peer of the admin endpoint that poolctl cannot be: pipelined requests, several
# connections at once. peer.py PORT MODE ...; the daemon listens on 127.0.0.2.
import select, socket, ssl, struct, sys, time

HOST = "127.0.0.2"
port, mode, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def frame(msg):
    return struct.pack("<IIQHHHH", len(msg), 0, 1, 300, 0, 0x5047, 0) + msg

def lenfield(tag, b):
    return bytes([tag, len(b)]) + b

def command(cmd):
    return frame(lenfield(0x0A, cmd.encode()))

def quote(token):
    inner = lenfield(0x1A, token.encode())
    return frame(lenfield(0x0A, b"quote") + b"\xf2\x01" + bytes([len(inner)]) + inner)

def connect(cert=None, bind="127.0.0.1"):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert + ".pem", cert + ".key")
    raw = socket.socket()
    raw.bind((bind, 0))
    raw.settimeout(10)
    raw.connect((HOST, port))
    return ctx.wrap_socket(raw)

class Reader:
    """Answers as they come: statuses, and whether the daemon closed the connection."""

    def __init__(self, s):
        self.s, self.buf, self.got, self.closed = s, b"", [], False

    def read_once(self, wait):
        self.s.settimeout(wait)
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionError, ssl.SSLError, OSError):
            d = b""
        if not d:
            self.closed = True
            return False
        self.buf += d
        while len(self.buf) >= 24:
            n = struct.unpack("<I", self.buf[:4])[0]
            if len(self.buf) < 24 + n:
                break
            body = self.buf[24:24 + n]
            self.got.append("refused" if body[:1] == b"\x08" else "ok")
            self.buf = self.buf[24 + n:]
        return True

    def ready(self):
        return self.s.pending() or select.select([self.s], [], [], 0)[0]

    def until(self, limit, wait=3):
        while not self.closed and len(self.got) < limit and self.read_once(wait):
            pass
        return self.got, self.closed

def replies(s, limit):
    return Reader(s).until(limit)

def send_all(s, frame_bytes, n):
    """Sends n copies in batches, reading answers meanwhile; stops when the daemon closes."""
    r = Reader(s)
    for i in range(0, n, 100):
        try:
            s.settimeout(10)
            s.sendall(frame_bytes * min(100, n - i))
        except (ConnectionError, ssl.SSLError, OSError):
            break
        while not r.closed and r.ready() and r.read_once(1):
            pass
        if r.closed:
            break
    return r.until(n)

def alive(s):
    s.settimeout(0.3)
    try:
        return s.recv(1) != b""
    except socket.timeout:
        return True
    except (ConnectionError, ssl.SSLError):
        return False

if mode == "flood":  # flood CERT|none N COMMAND
    cert, n, cmd = args
    s = connect(None if cert == "none" else cert)
    got, closed = send_all(s, command(cmd), int(n))
    print("answers %d refused %d closed %s" % (len(got), got.count("refused"), closed))
elif mode == "token":  # token TOKEN: two quotes on one connection
    s = connect()
    s.sendall(quote(args[0]) * 2)
    got, closed = replies(s, 2)
    print("answers %s closed %s" % (",".join(got), closed))
elif mode == "crowd":  # crowd ADMIN_CERT: fill the slots, then ask as an admin
    held = [connect(bind="127.0.0.%d" % (5 + i // 2)) for i in range(4)]
    time.sleep(0.5)
    pending = []
    for i in range(2):
        r = socket.socket()
        r.bind(("127.0.0.7", 0))
        r.connect((HOST, port))
        pending.append(r)
    try:
        a = connect(args[0])
        a.sendall(command("status"))
        got, _ = replies(a, 1)
        answer = got[0] if got else "none"
    except (ConnectionError, ssl.SSLError, socket.timeout) as e:
        answer = "error"
    print("held %d admin %s" % (sum(alive(s) for s in held), answer))
