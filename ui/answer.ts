/**
 * Answering a session that waits on a human, from the page: the answer is checked against the scripted-answers
 * schema (hil/), written to a private file, and `pda resume <id> --hil ui:<file>` continues the session in a
 * child process — the same path as `pda resume` at a terminal, with the answer logged as given by "ui". The
 * page follows the session live as that child writes it.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { ConfigError, StoreError, distPath } from "../core/index.js";
import { QuestionKind, ScriptFile } from "../hil/index.js";
import type { SessionStore } from "../memory/index.js";

export const AnswerRequest = z.strictObject({
  /** The kind of the question answered; must be the kind the session waits on. */
  kind: QuestionKind,
  /** One entry of that kind, as a scripted-answers file holds it (e.g. {choice: "answer", text: "…"}). */
  entry: z.unknown(),
});
export type AnswerRequest = z.infer<typeof AnswerRequest>;

/** What became of the last answer given for a session in this server. */
export interface ResumeState {
  state: "running" | "done" | "failed";
  /** For a failed resume: the end of what it printed on stderr. */
  message?: string;
}

export interface ResumerOptions {
  store: SessionStore;
  /** The config `pda ui` was given (--config / PDA_CONFIG), passed to the resume. */
  config?: string;
  /** Environment of the resume (default: this process's, for model keys and base URLs). */
  env?: NodeJS.ProcessEnv;
}

export class Resumer {
  private readonly states = new Map<string, ResumeState>();
  /** Called when a resume has ended and its state is set: live pages show it at once. */
  onEnd?: () => void;

  constructor(private readonly o: ResumerOptions) {}

  state(sessionId: string): ResumeState | undefined {
    return this.states.get(sessionId);
  }

  /** Check the answer and start the resume; throws ConfigError (bad answer) or StoreError (not waiting). */
  answer(idOrPrefix: string, body: unknown): { session_id: string; pid: number } {
    const { store } = this.o;
    const id = store.resolveId(idOrPrefix);
    const status = store.displayStatus(id);
    if (status !== "awaiting_human") {
      throw new StoreError("STORE_NOT_WAITING", `session ${id} is ${status}, not waiting on a human`);
    }
    if (this.states.get(id)?.state === "running") {
      throw new StoreError("STORE_NOT_WAITING", `session ${id} is being resumed with an answer already`);
    }
    const req = AnswerRequest.safeParse(body);
    if (!req.success) throw new ConfigError(`bad answer: ${req.error.issues[0]?.message ?? "invalid"}`);
    const pending = store.getSession(id).pending_human as { kind?: string } | undefined;
    if (pending?.kind !== req.data.kind) {
      throw new ConfigError(
        `the session waits on a ${pending?.kind ?? "question of unknown kind"}, not a ${req.data.kind} answer`,
      );
    }
    const script = ScriptFile.safeParse({ [req.data.kind]: [req.data.entry] });
    if (!script.success) {
      const issue = script.error.issues[0];
      throw new ConfigError(
        `bad ${req.data.kind} answer: ${issue?.path.slice(2).join(".") || "answer"}: ${issue?.message}`,
      );
    }

    const dir = mkdtempSync(join(tmpdir(), "pda-ui-answer-"));
    const file = join(dir, "answer.json");
    writeFileSync(file, JSON.stringify({ [req.data.kind]: [req.data.entry] }), { mode: 0o600 });
    const errFile = join(dir, "stderr.txt");
    const args = [distPath("main.js"), "--db", store.path];
    if (this.o.config) args.push("--config", this.o.config);
    args.push("resume", id, "--hil", `ui:${file}`, "--json");
    const child = spawn(process.execPath, args, {
      env: this.o.env ?? process.env,
      stdio: ["ignore", "ignore", openSync(errFile, "w")],
    });
    this.states.set(id, { state: "running" });
    child.once("exit", (code) => {
      // Exit 1 is a session that ended without reaching its goal: the resume itself worked.
      if (code === 0 || code === 1) this.states.set(id, { state: "done" });
      else {
        const tail = readFileSync(errFile, "utf8").trim().slice(-2000);
        this.states.set(id, { state: "failed", message: `pda resume exited ${code}: ${tail}` });
      }
      rmSync(dir, { recursive: true, force: true });
      this.onEnd?.();
    });
    child.once("error", (e) => {
      this.states.set(id, { state: "failed", message: e.message });
      this.onEnd?.();
    });
    return { session_id: id, pid: child.pid ?? 0 };
  }
}
