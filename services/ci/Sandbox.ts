import * as Fs from "node:fs"

/** Per-job resource limits (GUIDE §14), applied with `prlimit` before the sandbox starts. */
export interface SandboxLimits {
  /** Address space per process, bytes (RLIMIT_AS). */
  readonly memoryBytes: number
  /** Processes of the job's user (RLIMIT_NPROC): stops fork bombs. */
  readonly processes: number
  /** CPU seconds per process (RLIMIT_CPU). */
  readonly cpuSeconds: number
  /** Largest file a job may write, bytes (RLIMIT_FSIZE). */
  readonly fileBytes: number
  /** Size of the private `/tmp`, bytes. */
  readonly tmpBytes: number
}

export const defaultLimits: SandboxLimits = {
  memoryBytes: 4 * 1024 ** 3,
  processes: 256,
  cpuSeconds: 900,
  fileBytes: 1024 ** 3,
  tmpBytes: 512 * 1024 ** 2
}

export interface SandboxSpec {
  /** Host folder mounted read-write at `/workspace` (the job's working directory). */
  readonly workspace: string
  /** Host folder mounted read-write at `/home/ci` (`HOME`). */
  readonly home: string
  /** A host file with the `passwd` line of the job's user, mounted at `/etc/passwd`. */
  readonly passwd: string
  /** The unprivileged host uid/gid the job runs as (a fresh one per run). */
  readonly uid: number
  readonly limits: SandboxLimits
  readonly command: string
  /** Extra host folders mounted read-write (the cache transfer folder). */
  readonly binds?: ReadonlyArray<SandboxBind> | undefined
  /** Outbound network through the egress proxy; without it the job has only its own loopback. */
  readonly network?: SandboxNetwork | undefined
}

export interface SandboxNetwork {
  /** Host folder with the proxy's socket and the forwarder's script, mounted at `SANDBOX_NET`. */
  readonly dir: string
  /** A Node binary on the host, run (as the job's user) for the forwarder. */
  readonly node: string
}

export const SANDBOX_NET = "/run/canopy-net"
/** Where a Node binary from outside `/usr` is mounted for the forwarder. */
const SANDBOX_NODE = "/opt/canopy/node"

export interface SandboxBind {
  readonly host: string
  readonly sandbox: string
}

export const SANDBOX_WORKSPACE = "/workspace"
export const SANDBOX_HOME = "/home/ci"
export const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/** System files a toolchain reads; each mounted read-only when the host has it. */
const ETC_FILES = [
  "/etc/alternatives",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
  "/etc/nsswitch.conf",
  "/etc/group",
  "/etc/hosts",
  "/etc/python3",
  "/etc/python3.11",
  "/etc/mime.types"
]

/**
 * pid 1 of the job's PID namespace: runs the command, and on SIGTERM passes it to every
 * process of the namespace (so tools can release locks). When it exits the kernel kills
 * whatever is left in the namespace, so a job never leaves a process behind.
 */
const INIT = [
  "exec 2>&1",
  "trap 'kill -TERM -1 2>/dev/null' TERM",
  // With network: the forwarder to the egress proxy first, the command once it listens (≤ 10 s).
  "if [ -n \"$2\" ]; then",
  `  "$2" ${SANDBOX_NET}/forward.js ${SANDBOX_NET}/proxy.sock /tmp/.canopy-net-ready >/dev/null 2>&1 &`,
  "  i=0; while [ ! -e /tmp/.canopy-net-ready ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done",
  "fi",
  "/bin/sh -c \"$1\" &",
  "child=$!",
  "while :; do wait \"$child\"; code=$?; kill -0 \"$child\" 2>/dev/null || break; done",
  "exit \"$code\""
].join("\n")

/** Tools the sandbox needs on the host (installed by `.ci/run` and the Dockerfile). */
export const SANDBOX_TOOLS = ["/usr/bin/bwrap", "/usr/bin/prlimit", "/usr/bin/setpriv"] as const

export const isRoot = () => process.getuid?.() === 0

export const sandboxAvailable = (): boolean => SANDBOX_TOOLS.every((tool) => Fs.existsSync(tool))

/**
 * The argv that runs `spec.command` in a bubblewrap sandbox (GUIDE §14): `prlimit` sets the
 * limits, `setpriv` drops to the job's unprivileged uid, and `bwrap` (unprivileged, so with a
 * user namespace of its own) unshares user, PID, IPC, UTS, cgroup and network namespaces.
 * The sandbox sees read-only system folders, the workspace and its home, a private `/tmp`,
 * and only a loopback interface of its own: no host address, no DATA_DIR, no Canopy file.
 * With `network`, the only way out is the egress proxy's unix socket (see `EgressProxy`),
 * which the init's forwarder offers on the sandbox's own `127.0.0.1:3128`.
 * `--info-fd 3` reports the outside pid of the namespace's init, which cancel signals.
 */
export const sandboxArgv = (spec: SandboxSpec): ReadonlyArray<string> => {
  const { limits } = spec
  const etc = ETC_FILES.filter((path) => Fs.existsSync(path)).flatMap((path) => ["--ro-bind", path, path])
  return [
    "/usr/bin/prlimit",
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--cpu=${limits.cpuSeconds}`,
    `--fsize=${limits.fileBytes}`,
    "--nofile=4096",
    "--core=0",
    "--",
    // As root, drop to the run's own uid; otherwise bwrap runs as this (unprivileged) user.
    ...(isRoot()
      ? ["/usr/bin/setpriv", `--reuid=${spec.uid}`, `--regid=${spec.uid}`, "--clear-groups", "--no-new-privs", "--"]
      : []),
    "/usr/bin/bwrap",
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-net",
    "--unshare-cgroup-try",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--as-pid-1",
    "--hostname",
    "canopy-ci",
    "--ro-bind",
    "/usr",
    "/usr",
    "--symlink",
    "usr/bin",
    "/bin",
    "--symlink",
    "usr/sbin",
    "/sbin",
    "--symlink",
    "usr/lib",
    "/lib",
    "--symlink",
    "usr/lib64",
    "/lib64",
    ...etc,
    "--ro-bind",
    spec.passwd,
    "/etc/passwd",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--size",
    String(limits.tmpBytes),
    "--tmpfs",
    "/tmp",
    "--bind",
    spec.home,
    SANDBOX_HOME,
    "--bind",
    spec.workspace,
    SANDBOX_WORKSPACE,
    ...(spec.binds ?? []).flatMap((bind) => ["--bind", bind.host, bind.sandbox]),
    ...(spec.network === undefined ? [] : ["--bind", spec.network.dir, SANDBOX_NET]),
    ...(spec.network === undefined || spec.network.node.startsWith("/usr/")
      ? []
      : ["--ro-bind", spec.network.node, SANDBOX_NODE]),
    "--chdir",
    SANDBOX_WORKSPACE,
    "--info-fd",
    "3",
    "--",
    "/bin/sh",
    "-c",
    INIT,
    "canopy-ci-init",
    spec.command,
    spec.network === undefined ? "" : spec.network.node.startsWith("/usr/") ? spec.network.node : SANDBOX_NODE
  ]
}
