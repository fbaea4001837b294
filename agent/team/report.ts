/**
 * A sub-agent's result contract at run time: the schema its report must satisfy, and what its caller gets —
 * the report, or UNKNOWN with the reason when the sub-agent ended any other way (budget, crash, no report).
 */
import { z } from "zod";
import { clip, isPdaError, errorMessage, type AgentReport, type AgentSession } from "../../core/index.js";
import { SUCCESS_CODE, UNKNOWN_CODE, type Agent, type ResultField } from "./config.js";

/** What `agents.<name>(...)` resolves to: the report, with the sub-agent's tool calls and session id. */
export interface AgentResult extends AgentReport {
  tool_calls_used: number;
  session_id: string;
}

/** The report inside a result (what a sub-agent's session keeps). */
export function reportOf(r: AgentResult): AgentReport {
  const out: Record<string, unknown> = { ...r };
  delete out.tool_calls_used;
  delete out.session_id;
  return out as AgentReport;
}

const FIELD_TYPES: Record<ResultField["type"], () => z.ZodType> = {
  string: () => z.string(),
  number: () => z.number(),
  boolean: () => z.boolean(),
  object: () => z.record(z.string(), z.unknown()),
  array: () => z.array(z.unknown()),
  any: () => z.unknown(),
};

/** The schema of an agent's report: its codes, its extra fields (optional), nothing else. */
export function reportSchema(a: Agent): z.ZodType<AgentReport> {
  const extra = Object.fromEntries(
    Object.entries(a.result.fields).map(([k, f]) => [k, FIELD_TYPES[f.type]().optional()]),
  );
  return z
    .object({
      success: z.boolean(),
      error_code: z.enum(a.codes as [string, ...string[]]),
      reason: z.string().min(1, "say why, in one sentence"),
      result: z.unknown().optional(),
      ...extra,
    })
    .strict()
    .superRefine((r, ctx) => {
      if (r.success !== (r.error_code === SUCCESS_CODE)) {
        ctx.addIssue({
          code: "custom",
          path: ["error_code"],
          message: r.success
            ? `a successful report has error_code "${SUCCESS_CODE}"`
            : `a failed report needs an error code other than "${SUCCESS_CODE}"`,
        });
      }
    }) as unknown as z.ZodType<AgentReport>;
}

/** A report checked against the contract, or a message saying what is wrong with it. */
export function checkReport(
  a: Agent,
  value: unknown,
): { ok: true; report: AgentReport } | { ok: false; message: string } {
  const parsed = reportSchema(a).safeParse(value);
  if (parsed.success) return { ok: true, report: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(report)"}: ${i.message}`);
  return { ok: false, message: issues.join("; ") };
}

function unknown(session_id: string, tool_calls_used: number, reason: string): AgentResult {
  return { success: false, error_code: UNKNOWN_CODE, reason, result: null, tool_calls_used, session_id };
}

/**
 * What the caller sees when a sub-agent's loop is over: its report; or a CONCLUDE whose conclusion is a valid
 * report (JSON); or UNKNOWN saying how it ended (status and reason, or the error that stopped it).
 */
export function outcomeOf(a: Agent, sessionId: string, s?: AgentSession, error?: unknown): AgentResult {
  const used = s?.usage.tool_calls ?? 0;
  if (s?.report) return { ...s.report, tool_calls_used: used, session_id: sessionId };
  if (error !== undefined || !s) {
    const code = isPdaError(error) ? `${error.code}: ` : "";
    return unknown(sessionId, used, `the agent crashed: ${code}${errorMessage(error)}`);
  }
  if (s.status === "succeeded") {
    const answer = s.state.final_answer ?? "";
    let value: unknown;
    try {
      value = JSON.parse(answer);
    } catch {
      value = undefined;
    }
    const checked = value === undefined ? undefined : checkReport(a, value);
    if (checked?.ok) return { ...checked.report, tool_calls_used: used, session_id: sessionId };
    const why = checked ? ` (${checked.message})` : "";
    return unknown(
      sessionId,
      used,
      `the agent ended without a valid report${why}; its answer was: ${clip(answer, 300)}`,
    );
  }
  return unknown(sessionId, used, `${s.status}: ${s.status_reason ?? "no reason given"}`);
}
