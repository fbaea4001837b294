/**
 * What the models are shown, and asking them: the query as the guard lets the prompts see it, memory hits and
 * tool reliability (read once per drive), the plan and history, the tools ranked for the step — and each
 * perception or decision call made within the budgets, counted and logged.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import {
  ToolError,
  type DecisionOutput,
  type DownServer,
  type PerceptionSnapshot,
  type SnapshotType,
  type Phase,
} from "../../core/index.js";
import type { DecisionInput } from "../../decision/index.js";
import { findToolCalls, formatFindings, guardQuery, toolRankerFor } from "../../heuristics/index.js";
import type { PerceptionInput } from "../../perception/index.js";
import type { LoopEvent } from "./events.js";
import { defaultDecision, defaultPerception } from "./hooks.js";
import { modelCall } from "./model-call.js";
import { checkBudgets, type Decide, type LoopContext, type Run } from "./next.js";
import { currentPlan } from "./session.js";

/**
 * What every drive of a session needs before its first move — a new run, a resume, a hand-over alike: the
 * query as the prompts may see it, memory hits and tool reliability. Returns why the query is refused, if it is.
 */
export function prepare(ctx: LoopContext, run: Run): string | undefined {
  const { profile, memory } = ctx.deps;
  if (profile.guards.query) {
    const g = guardQuery(run.s.original_query, {
      exists: ctx.deps.exists ?? existsOnDisk,
      blocklist: profile.blocklist,
    });
    if (g.blocking) return `the query was refused: ${formatFindings(g.findings)}`;
    run.query = g.sanitized;
    if (g.findings.length) {
      run.queryFindings = `Checks on the request:\n${formatFindings(g.findings)}\n`;
      ctx.log.emit({ type: "warning", source: "query guard", message: formatFindings(g.findings) });
    }
  }
  run.memory = memory?.recall(run.query) ?? "";
  run.toolStats = memory?.toolStats() ?? "";
  run.toolStatRows = memory?.toolStatRows?.();
  return undefined;
}

/** Perception of the query or of a step's result, kept as the session's next snapshot. */
export async function perceive(
  ctx: LoopContext,
  run: Run,
  input: Pick<PerceptionInput, "mode" | "step">,
  type: SnapshotType,
  stepIndex?: number,
): Promise<PerceptionSnapshot> {
  const { s } = run;
  const full: PerceptionInput = {
    ...input,
    memory: run.memory,
    query: run.query,
    queryFindings: run.queryFindings,
    humanInputs: s.state.human_inputs,
    plan: currentPlan(s),
    history: s.steps,
    signal: run.signal,
  };
  const phase = ctx.deps.hooks?.perception ?? defaultPerception;
  const snapshot = await callPhase(ctx, run, "perception", phase, full);
  ctx.log.snapshot(s, type, snapshot, stepIndex);
  return snapshot;
}

export async function decide(ctx: LoopContext, run: Run, next: Decide): Promise<DecisionOutput> {
  const { s } = run;
  const unavailable = serversDown(ctx);
  const full: DecisionInput = {
    mode: next.mode,
    snapshot: next.snapshot,
    guidance: next.guidance,
    memory: run.memory,
    query: run.query,
    humanInputs: s.state.human_inputs,
    tools: selectTools(ctx, run, next),
    ...(unavailable.length && { unavailable }),
    toolStats: run.toolStats,
    plan: currentPlan(s),
    history: s.steps,
    signal: run.signal,
  };
  return callPhase(ctx, run, "decision", ctx.deps.hooks?.decision ?? defaultDecision, full);
}

/**
 * The servers that are down now. When every enabled one is, no step can do anything: the session ends here
 * with SERVER_UNAVAILABLE (exit 3) naming them, rather than the model planning around tools it cannot call.
 */
export function serversDown(ctx: LoopContext): DownServer[] {
  const a = ctx.deps.host.availability?.();
  if (!a || a.down.length === 0) return [];
  if (a.enabled > 0 && a.down.length === a.enabled) {
    const why = a.down.map((d) => `${d.server} (${d.reason})`).join("; ");
    throw new ToolError("SERVER_UNAVAILABLE", "*", `every configured MCP server is down: ${why}`);
  }
  return a.down;
}

/** A model phase within the budgets, each of its calls checked against them first, counted and logged. */
function callPhase<I, O>(
  ctx: LoopContext,
  run: Run,
  role: "perception" | "decision",
  phase: Phase<I, O>,
  input: I,
): Promise<O> {
  const call = {
    recorder: ctx.deps.recorder,
    clock: ctx.clock,
    account: run.account,
    check: () => checkBudgets(run, ctx.deps.signal),
    emit: (e: LoopEvent) => ctx.log.emit(e),
  };
  return phase(input, modelCall(call, run.s, ctx.deps.models[role]));
}

/** The tools the decision sees: the top K by relevance and reliability, plus every tool the plan has used. */
function selectTools(ctx: LoopContext, run: Run, next: Decide) {
  const tools = ctx.deps.host.tools();
  const k = ctx.deps.profile.tool_top_k;
  if (tools.length <= k) return tools;
  const used = run.s.steps.flatMap((st) => (st.code ? findToolCalls(st.code, tools) : []));
  // Built on the first decision over this tool list that has more tools than it may see, then shared.
  return toolRankerFor(tools).rank({
    query: run.query,
    step: [next.snapshot.result_requirement, currentPlan(run.s)?.plan_text.join(" ")]
      .filter(Boolean)
      .join(" "),
    stats: run.toolStatRows,
    topK: k,
    alwaysInclude: used,
  }).tools;
}

/** The query guard's view of the file system: does a path the user named exist? */
function existsOnDisk(path: string): boolean {
  return existsSync(path.startsWith("~/") ? join(homedir(), path.slice(2)) : path);
}
