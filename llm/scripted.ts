/**
 * `scripted:<file>`: plays back replies from a YAML/JSON file, in order per role. Replies take the same
 * parse/repair/validate path as a real model's, so a malformed entry exercises the repair round.
 *
 * File shape: `{ perception: [entry, ...], decision: [entry, ...], <role>: [...] }`, where an entry is
 * - the value object itself (sent as its JSON text),
 * - `{ raw: "<text>" }` — the exact text the "model" replies (malformed output, prose, fences, ...),
 * - `{ error: { code, message } }` — the call fails with that ModelError.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { parseYaml } from "../config/index.js";
import {
  ConfigError,
  MODEL_ERROR_CODES,
  ModelError,
  type ModelErrorCode,
  type RawCompletion,
  type RawTurn,
} from "../core/index.js";
import type { Transport } from "./structured.js";

export const ScriptEntry = z.union([
  z.object({ raw: z.string() }).strict(),
  z
    .object({
      error: z
        .object({ code: z.enum(MODEL_ERROR_CODES), message: z.string().default("scripted error") })
        .strict(),
    })
    .strict(),
  // An `{error}` entry whose code is not a ModelError code must not pass as a plain value.
  z.record(z.string(), z.unknown()).refine((r) => !(Object.keys(r).length === 1 && "error" in r), {
    message: `an error entry is {error: {code, message}} with code one of ${MODEL_ERROR_CODES.join(", ")}`,
  }),
]);
export type ScriptEntry = z.infer<typeof ScriptEntry>;

export const Script = z.record(z.string(), z.array(ScriptEntry));
export type Script = z.infer<typeof Script>;

/** One turn as the scripted model saw it: assert on what the model was shown, not only on the answer. */
export interface ScriptedCall {
  role: string;
  system: string;
  prompt: string;
  schemaName: string;
  /** Position of the entry played in its role's list (0-based). */
  index: number;
}

/**
 * Where a test run collects its scripted models (testing/script-audit.ts, a vitest setup file, puts an array
 * here and fails the test whose script was not played exactly); absent outside tests.
 */
const AUDIT = Symbol.for("pda.scripted.audit");

/** What a test may allow its script: turns left unplayed, or calls past the script (SCRIPT_EXHAUSTED). */
export interface ScriptTolerance {
  unplayed?: boolean;
  unexpected?: boolean;
}

export class ScriptedTransport implements Transport {
  readonly provider = "scripted";
  readonly model: string;
  readonly calls: ScriptedCall[] = [];
  private readonly queues = new Map<string, ScriptEntry[]>();
  private readonly played = new Map<string, number>();
  /** Calls that found no reply left for their role. */
  private readonly unexpected: string[] = [];
  private tolerated: ScriptTolerance = {};

  constructor(script: Script, source = "inline") {
    this.model = source;
    for (const [role, entries] of Object.entries(Script.parse(script))) this.queues.set(role, [...entries]);
    (globalThis as { [AUDIT]?: ScriptedTransport[] })[AUDIT]?.push(this);
  }

  static fromFile(file: string): ScriptedTransport {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new ConfigError(`scripted:${file}: cannot read the script (${(e as Error).message})`, {
        cause: e,
      });
    }
    const data = parseYaml(`scripted:${file}`, text).value;
    const parsed = Script.safeParse(data ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ConfigError(
        `scripted:${file}: ${issue.path.join(".") || "(top level)"}: ${issue.message} ` +
          `(expected { <role>: [ <value> | {raw: text} | {error: {code, message}} ] })`,
      );
    }
    return new ScriptedTransport(parsed.data, file);
  }

  complete(turn: RawTurn): Promise<RawCompletion> {
    const queue = this.queues.get(turn.role);
    const index = this.played.get(turn.role) ?? 0;
    const entry = queue?.shift();
    if (!entry) {
      const message =
        `scripted:${this.model}: no ${index ? "more " : ""}"${turn.role}" replies in the script ` +
        `(${index} played); the ${turn.role} prompt was:\n${turn.prompt.slice(0, 500)}`;
      this.unexpected.push(message);
      return Promise.reject(new ModelError("SCRIPT_EXHAUSTED", message));
    }
    this.played.set(turn.role, index + 1);
    this.calls.push({
      role: turn.role,
      system: turn.system,
      prompt: turn.prompt,
      schemaName: turn.schemaName,
      index,
    });
    if (isError(entry)) return Promise.reject(new ModelError(entry.error.code, entry.error.message));
    const text = isRaw(entry) ? entry.raw : JSON.stringify(entry);
    return Promise.resolve({
      text,
      usage: { input_tokens: estimateTokens(turn.system + turn.prompt), output_tokens: estimateTokens(text) },
      // A played reply is a whole one; a script's error entry stands for a failure with no reply at all.
      finish_reason: "stop",
    });
  }

  /** Replies never played, per role: a test fails when its script has leftover turns. */
  unconsumed(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [role, q] of this.queues) if (q.length) out[role] = q.length;
    return out;
  }

  /** Allows this script leftover turns or calls past its end: for a test about exactly that. */
  tolerate(what: ScriptTolerance): this {
    this.tolerated = { ...this.tolerated, ...what };
    return this;
  }

  /** Why a test that used this script should fail: turns never played, calls it had no reply for. */
  problems(): string[] {
    const out: string[] = [];
    const left = this.unconsumed();
    if (!this.tolerated.unplayed && Object.keys(left).length) {
      out.push(`scripted:${this.model}: turns never played: ${JSON.stringify(left)}`);
    }
    if (!this.tolerated.unexpected) out.push(...this.unexpected.map((m) => `unexpected call: ${m}`));
    return out;
  }
}

function isRaw(e: ScriptEntry): e is { raw: string } {
  return Object.keys(e).length === 1 && typeof (e as { raw?: unknown }).raw === "string";
}

function isError(e: ScriptEntry): e is { error: { code: ModelErrorCode; message: string } } {
  const err = (e as { error?: unknown }).error;
  return Object.keys(e).length === 1 && !!err && typeof err === "object" && "code" in err;
}

/** A rough token count (4 characters a token) so scripted sessions report plausible usage. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
