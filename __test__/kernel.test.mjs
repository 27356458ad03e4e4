// What a sandboxed command can reach besides files: the kernel's keyring, new user
// namespaces, io_uring, bpf, perf, ptrace of host processes, and socket families beyond
// local and IP. Each case is an escape tried for real inside the real bubblewrap, and a
// test that fails if it works; beside them, the ordinary work that must keep working.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { runPrepared, runPreparedSync } from "./helpers/launch.mjs";
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
# A filter of its own with a listener would get the connects before the supervisor does.
import struct
insn = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
prog = Fprog(1, ctypes.addressof(insn))
libc.prctl(38, 1, 0, 0, 0)
print("seccomp_listener", sc(317, 1, 8, ctypes.byref(prog)))
print("seccomp_plain", sc(317, 1, 0, ctypes.byref(prog)))
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
        // a second supervisor may not be installed; an ordinary filter may (browsers do)
        seccomp_listener: EPERM,
        seccomp_plain: 0,
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

/** A host service on a unix socket that runs what it is sent, as the docker daemon or the
 *  systemd user manager would: `marker` appears when anything got through. */
function startExecService(address, marker) {
  const code = String.raw`
import socket, subprocess, sys
addr, marker = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(("\0" + addr[1:]) if addr.startswith("@") else addr)
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    cmd = c.recv(4096).decode()
    subprocess.run(["sh", "-c", cmd + " && touch " + marker])
    c.sendall(b"ran\n")
    c.close()
`;
  const child = spawn("python3", ["-c", code, address, marker], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve) => child.stdout.once("data", () => resolve(child)));
}

const CLIENT = String.raw`
import socket, sys
for a in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(("\0" + a[1:]) if a.startswith("@") else a)
        s.sendall(b"true")
        print("through", a, s.recv(10))
    except OSError as e:
        print("refused", a, e.errno)
`;

test("no unix socket outside the sandbox answers: an ssh-agent and a host exec service, by path and abstract name, network off and on", async (t) => {
  const { w, sandbox, runAsync } = socketSetup(t);
  const run = path.join(w.root, "run-user");
  mkdirSync(run, { recursive: true });
  // A real ssh-agent holding a key, its socket where XDG_RUNTIME_DIR would put it.
  const agentSock = path.join(run, "ssh-agent.sock");
  const agent = spawnSync("ssh-agent", ["-a", agentSock], { encoding: "utf8" });
  const agentPid = Number(/SSH_AGENT_PID=(\d+)/.exec(agent.stdout)[1]);
  t.after(() => process.kill(agentPid));
  spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "pi-sandbox-test-key", "-f", path.join(w.root, "key")]);
  const added = spawnSync("ssh-add", [path.join(w.root, "key")], { env: { ...process.env, SSH_AUTH_SOCK: agentSock }, encoding: "utf8" });
  assert.equal(added.status, 0, added.stderr);
  // The premise: outside the sandbox the agent lists the key.
  assert.match(spawnSync("ssh-add", ["-l"], { env: { ...process.env, SSH_AUTH_SOCK: agentSock }, encoding: "utf8" }).stdout, /pi-sandbox-test-key/);

  const marker = path.join(w.root, "host-ran");
  const pathSock = path.join(run, "exec.sock");
  const abstract = `@pi-sandbox-exec-${process.pid}`;
  const services = [await startExecService(pathSock, marker), await startExecService(abstract, marker)];
  t.after(() => services.forEach((s) => s.kill()));
  // The premise again: from outside, the service runs what it gets.
  writeFileSync(path.join(w.project, "client.py"), CLIENT);
  spawnSync("python3", [path.join(w.project, "client.py"), pathSock]);
  assert.ok(existsSync(marker), "the exec service does not work outside the sandbox");
  rmSync(marker);

  for (const network of ["off", "on"]) {
    const r = await runAsync(`SSH_AUTH_SOCK=${agentSock} ssh-add -l; echo "ssh-add=$?"; python3 client.py ${pathSock} ${abstract}`, network);
    assert.doesNotMatch(r.stdout, /pi-sandbox-test-key|through/, `network ${network}: ${r.stdout}`);
    assert.match(r.stdout, /ssh-add=2/);
    assert.match(r.stdout, new RegExp(`refused ${pathSock} 13`));
    // With network off the host's abstract names are in another namespace altogether.
    assert.match(r.stdout, new RegExp(`refused ${abstract} ${network === "off" ? 111 : 13}`));
    assert.equal(existsSync(marker), false, `network ${network}: the host service ran a command`);
    // Each refusal is reported after the command, naming the socket.
    assert.ok(r.findings.some((f) => f.includes(agentSock) && /outside the sandbox/.test(f)), r.findings.join("\n"));
  }
});

test("network.allowUnixSockets exposes the sockets the user lists, and only those", async (t) => {
  const { w, runAsync } = socketSetup(t, (w) => ({ network: { allowUnixSockets: [path.join(w.root, "run-user", "exposed.sock")] } }));
  const marker = path.join(w.root, "host-ran");
  const exposed = path.join(w.root, "run-user", "exposed.sock");
  const other = path.join(w.root, "run-user", "other.sock");
  mkdirSync(path.dirname(exposed), { recursive: true });
  const services = [await startExecService(exposed, marker), await startExecService(other, `${marker}-other`)];
  t.after(() => services.forEach((s) => s.kill()));
  writeFileSync(path.join(w.project, "client.py"), CLIENT);
  const r = await runAsync(`python3 client.py ${exposed} ${other}`, "off");
  assert.match(r.stdout, new RegExp(`through ${exposed}`));
  assert.match(r.stdout, new RegExp(`refused ${other} 13`));
  assert.equal(existsSync(`${marker}-other`), false);
  assert.match(sandboxOf(w).describe(), /allowUnixSockets/);
});

test("local IPC inside the sandbox keeps working: servers and clients it starts, multiprocessing's Manager, socketpair; unix datagram sockets are refused", async (t) => {
  const { w, runAsync } = socketSetup(t);
  writeFileSync(
    path.join(w.project, "ipc.py"),
    String.raw`
import multiprocessing, os, socket, tempfile, threading
out = []
def serve(srv):
    c, _ = srv.accept(); c.sendall(c.recv(10)); c.close()
for where in (tempfile.mkdtemp(), os.getcwd()):
    p = os.path.join(where, "srv.sock")
    srv = socket.socket(socket.AF_UNIX); srv.bind(p); srv.listen(1)
    threading.Thread(target=serve, args=(srv,)).start()
    c = socket.socket(socket.AF_UNIX); c.connect(p); c.sendall(b"echo"); out.append(c.recv(10).decode())
    os.unlink(p)
name = "\0pi-own-%d" % os.getpid()
srv = socket.socket(socket.AF_UNIX); srv.bind(name); srv.listen(1)
threading.Thread(target=serve, args=(srv,)).start()
c = socket.socket(socket.AF_UNIX); c.connect(name); c.sendall(b"abstract"); out.append(c.recv(10).decode())
with multiprocessing.Manager() as m:
    d = m.dict(); d["k"] = "manager"; out.append(d["k"])
a, b = socket.socketpair(); a.sendall(b"pair"); out.append(b.recv(4).decode())
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); out.append("dgram-open")
except OSError as e:
    out.append("dgram-%d" % e.errno)
print(" ".join(out))
`,
  );
  for (const network of ["off", "on"]) {
    const r = await runAsync("python3 ipc.py", network);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /echo echo abstract manager pair dgram-1/, `network ${network}`);
    assert.deepEqual(r.findings, []);
  }
});

function sandboxOf(w) {
  return Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
}

/** A world (with an optional global config made from it) and an async sandboxed run. */
function socketSetup(t, globalConfig) {
  const w = makeWorld("sockets");
  t.after(w.cleanup);
  if (globalConfig) {
    mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
    writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify(globalConfig(w)));
  }
  const runAsync = (command, network) => {
    const p = sandboxOf(w).prepareBash(command, network);
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPrepared(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  };
  return { w, sandbox: () => sandboxOf(w), runAsync };
}
