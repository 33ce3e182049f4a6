#!/usr/bin/env python3
"""The QMP client of every host-side test and of vpmu-profile (standard
library only); also a command line for shell scripts:

  qmpclient.py SOCK COMMAND [ARGS-JSON]   run one command; print its
                                          "return" as JSON; on a QMP error
                                          print it to stderr and exit 1
  qmpclient.py SOCK --hmp 'savevm tag'    human-monitor-command; print its
                                          output; exit 1 if it is not empty
                                          (HMP reports errors as text)
  qmpclient.py SOCK --wait-migrate SECS   poll query-migrate until
                                          "completed" (exit 0) or "failed"
                                          / "cancelled" / timeout (exit 1)
  qmpclient.py SOCK --wait-status SECS    poll query-status until it is no
                                          longer "inmigrate"; print it

Each call opens its own connection (QEMU's QMP server takes one client at
a time) and retries the connect for a few seconds, so it can be used right
after QEMU is started.  Exit 2: could not talk to QEMU.
"""
import json
import socket
import sys
import time


class QMPError(Exception):
    pass


class QMP:
    def __init__(self, path, connect_timeout=10.0):
        deadline = time.monotonic() + connect_timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(120)
        self.buf = b""
        self.events = []            # events seen, oldest first
        greeting = self._read()
        if "QMP" not in greeting:
            raise QMPError("no QMP greeting: %r" % greeting)
        self.cmd("qmp_capabilities")

    def _read(self):
        """The next JSON object QEMU sends (one per line)."""
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("QMP connection closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, args=None):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            resp = self._read()
            if "event" in resp:
                self.events.append(resp)
                continue
            if "error" in resp:
                raise QMPError(json.dumps(resp["error"]))
            if "return" in resp:
                return resp["return"]

    def event(self, name, timeout):
        """The first event @name not taken yet (removed from .events),
        waiting up to @timeout seconds for it; None if none came."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev["event"] == name:
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                resp = self._read()
            except socket.timeout:
                return None
            finally:
                self.sock.settimeout(120)
            if "event" in resp:
                self.events.append(resp)

    def close(self):
        self.sock.close()


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path, what = argv[1], argv[2]
    try:
        q = QMP(path)
    except (OSError, EOFError, QMPError) as e:
        print("qmpclient: cannot talk to %s: %s" % (path, e), file=sys.stderr)
        return 2
    try:
        if what == "--hmp":
            out = q.cmd("human-monitor-command", {"command-line": argv[3]})
            sys.stdout.write(out)
            return 1 if out.strip() else 0
        if what == "--wait-migrate":
            deadline = time.monotonic() + float(argv[3])
            while time.monotonic() < deadline:
                st = q.cmd("query-migrate").get("status", "none")
                if st == "completed":
                    return 0
                if st in ("failed", "cancelled"):
                    print("qmpclient: migration %s" % st, file=sys.stderr)
                    return 1
                time.sleep(0.05)
            print("qmpclient: migration not completed in time", file=sys.stderr)
            return 1
        if what == "--wait-status":
            deadline = time.monotonic() + float(argv[3])
            while True:
                st = q.cmd("query-status")
                if st["status"] != "inmigrate" or time.monotonic() > deadline:
                    print(json.dumps(st))
                    return 0 if st["status"] != "inmigrate" else 1
                time.sleep(0.05)
        args = json.loads(argv[3]) if len(argv) > 3 else None
        try:
            ret = q.cmd(what, args)
        except EOFError:
            if what == "quit":      # QEMU may close before answering
                return 0
            raise
        print(json.dumps(ret))
        return 0
    except QMPError as e:
        print("qmpclient: %s: %s" % (what, e), file=sys.stderr)
        return 1
    except (OSError, EOFError) as e:
        print("qmpclient: %s: %s" % (what, e), file=sys.stderr)
        return 2
    finally:
        q.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
