/**
 * Ends stdio servers when pda dies without cleaning up (SIGKILL, OOM): the exit hook in stdio.ts cannot run
 * then, and a server that ignores stdin EOF would run on. One small `sh` per pda process holds a pipe from
 * it and keeps the list of live servers (pid and start time, told as they start and exit). When the pipe
 * closes with servers still listed, it runs watchdog-kill.js on them (SIGTERM, then SIGKILL, each server
 * with its descendants and its process group when it leads one). A clean exit empties the list first, so
 * the watchdog then just exits. Linux only (it needs /proc to tell a server from a reused pid).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { distPath } from "../../core/index.js";
import { startTime } from "./proctree.js";

/**
 * `+pid:start` adds, `-pid:start` removes; at end of input, the killer gets what is left. Signals that end
 * pda with its terminal's process group (Ctrl-C, hang-up) are ignored: the pipe closing is the signal.
 */
const SCRIPT = `
trap '' INT TERM HUP QUIT
node=$1 killer=$2 list=" "
while IFS= read -r line; do
  case $line in
    +*) list="$list\${line#+} " ;;
    -*) x=\${line#-}
        case $list in *" $x "*) list="\${list%%" $x "*} \${list#*" $x "}" ;; esac ;;
  esac
done
case $list in *[0-9]*) exec "$node" "$killer" $list ;; esac
`;

let watchdog: ChildProcess | undefined;
let failed = false;

function ensure(): ChildProcess | undefined {
  if (watchdog || failed || process.platform !== "linux") return watchdog;
  try {
    const child = spawn(
      "/bin/sh",
      ["-c", SCRIPT, "pda-watchdog", process.execPath, distPath("mcp_servers/hub/watchdog-kill.js")],
      {
        stdio: ["pipe", "ignore", "ignore"],
        // Out of pda's process group and session, so nothing sent to them reaches it.
        detached: true,
      },
    );
    child.on("error", () => {
      failed = true;
      watchdog = undefined;
    });
    child.stdin!.on("error", () => {
      // the watchdog is gone; servers still end through close() and the exit hook
    });
    // It must not keep pda alive.
    child.unref();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    watchdog = child;
  } catch {
    failed = true;
  }
  return watchdog;
}

/** The pid of this process's watchdog, once one runs (for tests and benches). */
export function watchdogPid(): number | undefined {
  return watchdog?.pid;
}

/** Tell the watchdog a server runs; returns how to tell it the server ended. */
export function watchServer(pid: number): () => void {
  const start = startTime(pid);
  const dog = start === undefined ? undefined : ensure();
  if (!dog) return () => {};
  const entry = `${pid}:${start}`;
  dog.stdin!.write(`+${entry}\n`);
  return () => {
    if (dog.stdin!.writable) dog.stdin!.write(`-${entry}\n`);
  };
}
