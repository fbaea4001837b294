/**
 * Drives a SessionRecorder the way the agent loop does (start, perceive, plan, steps with tool and model
 * calls, replans, human input, finish) and keeps the matching AgentSession in memory, so tests can compare
 * what the store gives back with what was written. Compiled to dist/ for the writer processes.
 */
import {
  newSession,
  type AgentSession,
  type ExecutionResult,
  type LlmCallRecord,
  type PerceptionSnapshot,
  type PlanReason,
  type PlanVersion,
  type SessionRecorder,
  type SessionStatus,
  type SnapshotRecord,
  type Step,
  type ToolCallRecord,
} from "../../core/index.js";

export interface SimSpec {
  id: string;
  query: string;
  steps: number;
  /** Text put in every free-text field the loop writes (prompts, code, results, answers), e.g. a secret. */
  marker?: string;
  /** Step indices after which the plan is revised (new plan version, reason replan_after_failure). */
  replanAfter?: number[];
  /** Step indices whose second tool call fails. */
  failingTools?: number[];
  /** Ask the human once after this step. */
  humanAfter?: number;
  /** A step whose result value is this many characters long. */
  bigResult?: { step: number; chars: number };
  status?: SessionStatus;
  statusReason?: string;
  finalAnswer?: string;
  /** USD per million tokens in and out: each model call gets its cost, and the session's usage their sum. */
  price?: { input_per_mtok: number; output_per_mtok: number };
  /** The provider the model calls are logged with (default "scripted"; "replay" for a replayed session). */
  provider?: string;
  /** Every model call fails (no model was reachable). */
  noModel?: boolean;
  /** Do not call finishSession (a session cut short). */
  noFinish?: boolean;
  now?: () => string;
  /** Called after each step's completion is saved (the writer process reports and pauses here). */
  afterStep?: (index: number) => void;
}

export function simulateSession(rec: SessionRecorder, spec: SimSpec): AgentSession {
  const now = spec.now ?? (() => new Date().toISOString());
  const mark = spec.marker ? ` ${spec.marker}` : "";
  const id = spec.id;
  const s = newSession(spec.query, id, now(), { agent: "simulated" });
  rec.startSession(s);

  const llm = (role: string, value: unknown) => {
    const raw = JSON.stringify(value);
    const r: LlmCallRecord = {
      role,
      provider: spec.provider ?? "scripted",
      model: "sim-1",
      ok: !spec.noModel,
      input_tokens: 100 + s.usage.llm_calls,
      output_tokens: 20 + (raw.length % 50),
      latency_ms: 3,
      attempts: 1,
      prompt: `You are the ${role}. Query: ${spec.query}${mark}`,
      raw_response: raw,
      value,
      started_at: now(),
    };
    if (spec.price) {
      r.cost_usd =
        (r.input_tokens * spec.price.input_per_mtok + r.output_tokens * spec.price.output_per_mtok) / 1e6;
      s.usage.cost_usd += r.cost_usd;
    }
    rec.recordLlmCall(id, r);
    s.usage.llm_calls += 1;
    s.usage.input_tokens += r.input_tokens;
    s.usage.output_tokens += r.output_tokens;
    s.usage.tokens += r.input_tokens + r.output_tokens;
  };

  const perceive = (type: SnapshotRecord["snapshot_type"], stepIndex?: number) => {
    const done = type === "step_result" && stepIndex === spec.steps - 1;
    const snapshot: PerceptionSnapshot = {
      entities: ["32", "5", `entity${s.snapshots.length}`],
      result_requirement: `A number answering: ${spec.query}`,
      original_goal_achieved: done,
      reasoning: `reasoning ${s.snapshots.length}${mark}`,
      local_goal_achieved: type !== "user_query",
      local_reasoning: "the step returned a number",
      last_tooluse_summary: stepIndex === undefined ? "none" : `step ${stepIndex} returned ${stepIndex * 7}`,
      solution_summary: done ? (spec.finalAnswer ?? "31") : "not ready yet",
      confidence: done ? 0.9 : 0.4,
    };
    llm("perception", snapshot);
    const record: SnapshotRecord = {
      index: s.snapshots.length,
      snapshot_type: type,
      snapshot,
      created_at: now(),
    };
    if (stepIndex !== undefined) record.step_index = stepIndex;
    s.snapshots.push(record);
    rec.saveSnapshot(id, record);
  };

  let plan!: PlanVersion;
  const decide = (reason: PlanReason, triggeredBy: string) => {
    const version = s.plan_versions.length + 1;
    plan = {
      version,
      plan_text: Array.from({ length: spec.steps }, (_, i) => `Step ${i}: part ${i} of v${version}${mark}`),
      steps: [],
      reason,
      triggered_by: triggeredBy,
      created_at: now(),
    };
    llm("decision", { plan_text: plan.plan_text, step_index: s.steps.length, type: "CODE" });
    s.plan_versions.push(plan);
    rec.savePlanVersion(id, plan);
  };

  perceive("user_query");
  decide("initial", "snapshot:0");
  for (let i = 0; i < spec.steps; i++) {
    const step: Step = {
      index: i,
      description: `part ${i}${mark}`,
      type: "CODE",
      code: `const a = await multiply(3, ${i});\nreturn add(a, 32); // ${mark}`,
      status: "pending",
      attempts: 0,
      plan_version: plan.version,
    };
    s.steps.push(step);
    plan.steps.push(i);
    rec.saveStep(id, structuredClone(step));

    const calls: ToolCallRecord[] = ["multiply", "add"].map((tool, k) => {
      const fails = k === 1 && (spec.failingTools ?? []).includes(i);
      const call: ToolCallRecord = {
        server: "math",
        tool,
        ok: !fails,
        latency_ms: 1 + ((i * 3 + k) % 7),
        bytes: 12,
        started_at: now(),
      };
      if (fails) {
        call.error_kind = "TOOL_ERROR";
        call.error_message = `add failed${mark}`;
      }
      rec.recordToolCall(id, i, call);
      s.usage.tool_calls += 1;
      return call;
    });
    const big = spec.bigResult?.step === i ? "x".repeat(spec.bigResult.chars) : undefined;
    const result: ExecutionResult = {
      ok: true,
      value: big ?? { value: 32 + 3 * i, note: `ok${mark}` },
      logs: [`computed ${i}${mark}`],
      tool_calls: calls,
      duration_ms: 4,
    };
    step.attempts = 1;
    step.status = "completed";
    step.execution_result = result;
    rec.saveStep(id, structuredClone(step));
    perceive("step_result", i);
    step.perception = s.snapshots[s.snapshots.length - 1]!.snapshot;
    rec.saveStep(id, structuredClone(step));
    spec.afterStep?.(i);

    if (spec.humanAfter === i) {
      const input = {
        kind: "clarification",
        question: `Which unit?${mark}`,
        answer: `metres${mark}`,
        answered_by: "scripted",
        at: now(),
        step_index: i,
      };
      s.state.human_inputs.push(input);
      rec.recordHumanInput(id, input);
    }
    if ((spec.replanAfter ?? []).includes(i)) decide("replan_after_failure", `step:${i}`);
  }
  if (spec.noFinish) return s;

  const status = spec.status ?? "succeeded";
  s.status = status;
  s.state.original_goal_achieved = status === "succeeded";
  s.state.final_answer = status === "succeeded" ? (spec.finalAnswer ?? "31") + mark : null;
  s.state.solution_summary =
    status === "succeeded" ? `The answer is ${spec.finalAnswer ?? "31"}${mark}` : "not ready yet";
  s.state.confidence = status === "succeeded" ? 0.9 : 0.2;
  if (spec.statusReason) s.status_reason = spec.statusReason;
  s.usage.ms = 42;
  rec.finishSession(s);
  return s;
}
