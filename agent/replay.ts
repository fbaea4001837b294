/**
 * Replay: run a logged session again with the model's logged outputs played back (no model needed) against
 * the live tools, and report every step whose result differs from the log.
 */
import type { AgentSession, LlmCallRecord } from "../core/index.js";
import { ScriptedTransport, StructuredProvider, type Script } from "../llm/index.js";

export interface StepDifference {
  step: number;
  description: string;
  logged: unknown;
  replayed: unknown;
}

/** The logged outputs of a session as a script, in order per role (failed calls are left out). */
export function scriptFromLog(calls: LlmCallRecord[]): Script {
  const script: Script = {};
  for (const c of calls) {
    if (!c.ok || c.value === undefined) continue;
    (script[c.role] ??= []).push(c.value as Record<string, unknown>);
  }
  return script;
}

export function replayModel(calls: LlmCallRecord[], sessionId: string) {
  const transport = new ScriptedTransport(scriptFromLog(calls), `replay:${sessionId}`);
  return { transport, model: new StructuredProvider(transport, { repair_rounds: 0 }) };
}

const outcome = (s: AgentSession["steps"][number]) =>
  s.execution_result
    ? s.execution_result.ok
      ? { ok: true, value: s.execution_result.value }
      : { ok: false, error: s.execution_result.error?.code }
    : { type: s.type, status: s.status };

/** Steps whose outcome (value, or error code) differs between the logged and the replayed session. */
export function diffSteps(logged: AgentSession, replayed: AgentSession): StepDifference[] {
  const out: StepDifference[] = [];
  const n = Math.max(logged.steps.length, replayed.steps.length);
  for (let i = 0; i < n; i++) {
    const a = logged.steps[i];
    const b = replayed.steps[i];
    const la = a ? outcome(a) : "(no such step)";
    const lb = b ? outcome(b) : "(no such step)";
    if (JSON.stringify(la) !== JSON.stringify(lb)) {
      out.push({ step: i, description: (a ?? b)!.description, logged: la, replayed: lb });
    }
  }
  return out;
}
