// What a sandboxed command can reach besides files: the kernel's keyring, new user
// namespaces, io_uring, bpf, perf, ptrace of host processes, and socket families beyond
// local and IP. Each case is an escape tried for real inside the real bubblewrap, and a
// test that fails if it works; beside them, the ordinary work that must keep working.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { runPreparedSync } from "./helpers/launch.mjs";
import { makeWorld, openPathForAnyone, repo } from "./helpers/pi-run.mjs";

const { Sandbox } = await import(path.join(repo, "index.js"));

function setup(t) {
  const w = makeWorld("kernel");
  t.after(w.cleanup);
  const run = (command, { network = "off" } = {}) => {
    const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
    const p = s.prepareBash(command, network);
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPreparedSync(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  };
  return { w, run };
}

// One line per attempt: `name errno` (0 when the call succeeded).
const PROBE = String.raw`
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(*args):
    r = libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
NR = {"keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
      "userfaultfd": 323, "io_uring_setup": 425, "setns": 308, "unshare": 272, "ptrace": 101}
print("keyctl_read", sc(NR["keyctl"], 11, int(sys.argv[1]), 0, 0))  # KEYCTL_READ
print("add_key", sc(NR["add_key"], b"user", b"planted", b"x", 1, -3))
print("bpf", sc(NR["bpf"], 0, 0, 0))
print("perf_event_open", sc(NR["perf_event_open"], 0, 0, -1, -1, 0))
print("userfaultfd", sc(NR["userfaultfd"], 0))
params = ctypes.create_string_buffer(120)
print("io_uring_setup", sc(NR["io_uring_setup"], 4, params))
print("unshare_user", sc(NR["unshare"], 0x10000000))
print("unshare_net", sc(NR["unshare"], 0x40000000))
print("ptrace_host", sc(NR["ptrace"], 16, int(sys.argv[2]), 0, 0))  # PTRACE_ATTACH
for fam, number, kind in (("AF_VSOCK", 40, 1), ("AF_PACKET", 17, 3), ("AF_BLUETOOTH", 31, 1), ("AF_ALG", 38, 5)):
    try:
        socket.socket(number, kind).close()
        print(fam, 0)
    except OSError as e:
        print(fam, e.errno)
`;

/** A key in the host's session keyring, as a login token would be; its serial. */
function hostKey(secret) {
  const r = spawnSync(
    "python3",
    [
      "-c",
      `import ctypes; l = ctypes.CDLL(None, use_errno=True); l.syscall.restype = ctypes.c_long
k = l.syscall(248, b"user", b"pi-sandbox-test", b"${secret}", ${secret.length}, -3)
buf = ctypes.create_string_buffer(64)
n = l.syscall(250, 11, ctypes.c_long(k), buf, 64)
print(k, buf.raw[:n].decode() if n > 0 else "unreadable", ctypes.get_errno())`,
    ],
    { encoding: "utf8" },
  );
  const [serial, readBack] = r.stdout.trim().split(" ");
  return { serial: Number(serial), readableOnHost: readBack === secret };
}

function results(stdout) {
  return Object.fromEntries(
    stdout
      .trim()
      .split("\n")
      .map((l) => l.split(" "))
      .filter((p) => p.length === 2)
      .map(([k, v]) => [k, Number(v)]),
  );
}

test("the kernel's keyring, namespaces, io_uring, bpf, perf, userfaultfd and odd socket families are closed", (t) => {
  const { w, run } = setup(t);
  const { serial, readableOnHost } = hostKey("KEYRING-TOKEN-7731");
  // The premise: outside the sandbox, the key is there to read.
  assert.ok(readableOnHost, "the host process could not read its own key");
  writeFileSync(path.join(w.project, "probe.py"), PROBE);
  for (const network of ["off", "on"]) {
    const r = run(`python3 probe.py ${serial} ${process.pid}; unshare -r true; echo "unshare-r=$?"`, { network });
    assert.doesNotMatch(r.stdout + r.stderr, /KEYRING-TOKEN-7731/);
    const got = results(r.stdout);
    const EPERM = 1, ESRCH = 3, ENOSYS = 38, EAFNOSUPPORT = 97;
    assert.deepEqual(
      got,
      {
        keyctl_read: EPERM,
        add_key: EPERM,
        bpf: EPERM,
        perf_event_open: EPERM,
        userfaultfd: EPERM,
        io_uring_setup: ENOSYS,
        unshare_user: EPERM,
        unshare_net: EPERM,
        // pi's own process is in no namespace the command can see.
        ptrace_host: ESRCH,
        AF_VSOCK: EAFNOSUPPORT,
        AF_PACKET: EAFNOSUPPORT,
        AF_BLUETOOTH: EAFNOSUPPORT,
        // The kernel's crypto API, a frequent source of kernel bugs.
        AF_ALG: EAFNOSUPPORT,
      },
      `network ${network}: ${r.stdout}\n${r.stderr}`,
    );
    assert.match(r.stdout, /unshare-r=1/);
  }
});

test("as an unprivileged user the same calls are closed", { skip: process.getuid() !== 0 && "needs root to switch user" }, (t) => {
  const w = makeWorld("kernel-unpriv");
  t.after(w.cleanup);
  openPathForAnyone(w.root);
  writeFileSync(path.join(w.project, "probe.py"), PROBE);
  spawnSync("chown", ["-R", "65534:65534", w.root]);
  const r = spawnSync(
    "setpriv",
    ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, path.join(repo, "bin", "pi-sandbox.js"), "run", "--", "bash", "-c", `python3 probe.py 0 ${process.pid}; unshare -r true; echo unshare-r=$?`],
    { cwd: w.project, encoding: "utf8", env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp } },
  );
  const got = results(r.stdout);
  assert.equal(got.io_uring_setup, 38, r.stdout + r.stderr);
  assert.equal(got.unshare_user, 1);
  assert.equal(got.keyctl_read, 1);
  assert.equal(got.bpf, 1);
  assert.equal(got.AF_VSOCK, 97);
  assert.match(r.stdout, /unshare-r=1/);
});

test("ordinary work is untouched: threads, processes, node workers, local and IP sockets, strace", (t) => {
  const { w, run } = setup(t);
  writeFileSync(
    path.join(w.project, "work.py"),
    String.raw`
import os, socket, subprocess, threading, multiprocessing
out = []
t = threading.Thread(target=lambda: out.append("thread")); t.start(); t.join()
with multiprocessing.Pool(2) as p: out.append("pool%d" % sum(p.map(abs, [-1, -2])))
a, b = socket.socketpair(); a.sendall(b"pair"); out.append(b.recv(4).decode())
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s6.close(); out.append("inet6")
out.append(subprocess.run(["true"]).returncode == 0 and "subprocess" or "no")
print(" ".join(out))
`,
  );
  const r = run(
    `python3 work.py; node -e 'const { Worker } = require("worker_threads"); new Worker("process.exit(7)", { eval: true }).on("exit", (c) => console.log("worker" + c))'; strace -f -e trace=none true 2>&1 && echo strace-ok`,
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /thread pool3 pair inet6 subprocess/);
  assert.match(r.stdout, /worker7/);
  assert.match(r.stdout, /strace-ok/);
});
