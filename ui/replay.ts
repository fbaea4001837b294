/**
 * Replaying a session from its page: `pda replay <id> --json --session-id <new>` runs in a child process (the
 * same command as at a terminal: logged model outputs, live tools), writing the replayed session to the store
 * under an id chosen here, so the page can link to it and follow it while it runs; when it ends, its JSON
 * report says which steps differ.
 */
import { spawn } from "node:child_process";
import { z } from "zod";
import { ConfigError, StoreError, distPath, newId } from "../core/index.js";
import type { SessionStore } from "../memory/index.js";

export const ReplayRequest = z.strictObject({
  /** The profile the session ran under, when more than one runs its agent (pda replay --profile). */
  profile: z
    .string()
    .regex(/^[\w.-]+$/, "a profile name is letters, digits, '.', '_' or '-'")
    .optional(),
});

/** What `pda replay --json` reports (the parts the page shows). */
const ReplayReport = z.looseObject({
  same_answer: z.boolean(),
  differences: z.array(
    z.object({ step: z.number(), description: z.string(), logged: z.unknown(), replayed: z.unknown() }),
  ),
  sub_agents: z.array(z.looseObject({})).default([]),
});
export type ReplayReport = z.infer<typeof ReplayReport>;

export interface ReplayState {
  state: "running" | "done" | "failed";
  /** The replayed session (in the store as soon as the replay starts it). */
  session_id: string;
  report?: ReplayReport;
  /** For a failed replay: why (the end of what it printed on stderr). */
  message?: string;
}

export interface ReplayerOptions {
  store: SessionStore;
  /** The config `pda ui` was given, passed to the replay (its servers are the ones replayed against). */
  config?: string;
  env?: NodeJS.ProcessEnv;
}

export class Replayer {
  private readonly states = new Map<string, ReplayState>();
  /** Called when a replay ends, so live pages look again without waiting for the store to change. */
  onEnd?: () => void;

  constructor(private readonly o: ReplayerOptions) {}

  /** The last replay of a logged session started from this server. */
  state(sessionId: string): ReplayState | undefined {
    return this.states.get(sessionId);
  }

  start(idOrPrefix: string, body: unknown): { session_id: string; replay_session_id: string } {
    const { store } = this.o;
    const id = store.resolveId(idOrPrefix);
    const req = ReplayRequest.safeParse(body ?? {});
    if (!req.success) {
      const issue = req.error.issues[0];
      throw new ConfigError(`bad replay request: ${issue?.path.join(".") || "body"}: ${issue?.message}`);
    }
    if (this.states.get(id)?.state === "running") {
      throw new StoreError("STORE_NOT_WAITING", `session ${id} is being replayed already`);
    }
    const replayId = newId();
    const args = [distPath("main.js"), "--db", store.path];
    if (this.o.config) args.push("--config", this.o.config);
    args.push("replay", id, "--json", "--session-id", replayId);
    if (req.data.profile) args.push("--profile", req.data.profile);
    const child = spawn(process.execPath, args, {
      env: this.o.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    this.states.set(id, { state: "running", session_id: replayId });
    const end = (s: ReplayState) => {
      this.states.set(id, s);
      this.onEnd?.();
    };
    child.once("close", (code) => {
      // 0: the replay matched the log; 1: some step differs. Either way stdout holds the report.
      const report = code === 0 || code === 1 ? ReplayReport.safeParse(parseJson(out)) : undefined;
      if (report?.success) end({ state: "done", session_id: replayId, report: report.data });
      else {
        const why = err.trim() || (report ? `unreadable report: ${out.slice(0, 500)}` : "no output");
        end({ state: "failed", session_id: replayId, message: `pda replay exited ${code}: ${why}` });
      }
    });
    child.once("error", (e) => end({ state: "failed", session_id: replayId, message: e.message }));
    return { session_id: id, replay_session_id: replayId };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
