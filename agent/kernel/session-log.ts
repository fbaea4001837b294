/**
 * The loop's writes: each change to a session is made here, written to the recorder and reported as a loop
 * event as it happens, so a crash loses at most the step in flight and the live trace follows the log.
 */
import type {
  AgentSession,
  Clock,
  DecisionOutput,
  PerceptionSnapshot,
  PlanReason,
  SessionRecorder,
  SnapshotType,
  Step,
  ToolCallRecord,
} from "../../core/index.js";
import type { LoopEvent } from "./events.js";
import { newStep, nextPlanVersion, type StepDecision } from "./plan.js";
import { currentPlan } from "./session.js";

export class SessionLog {
  constructor(
    private readonly recorder: SessionRecorder,
    private readonly clock: Clock,
    private readonly onEvent?: (event: LoopEvent) => void,
  ) {}

  emit(event: LoopEvent): void {
    this.onEvent?.(event);
  }

  start(s: AgentSession): void {
    this.recorder.startSession(s);
    this.emit({ type: "session_start", session_id: s.session_id, query: s.original_query });
  }

  toolCall(s: AgentSession, stepIndex: number | undefined, record: ToolCallRecord): void {
    // Answered from the log, it is the logged call again: counted once, as the store's own count does.
    if (record.state !== "replayed") s.usage.tool_calls += 1;
    this.recorder.recordToolCall(s.session_id, stepIndex ?? null, record);
    this.emit({ type: "tool_call", record });
  }

  snapshot(s: AgentSession, type: SnapshotType, snapshot: PerceptionSnapshot, stepIndex?: number): void {
    const record = {
      index: s.snapshots.length,
      snapshot_type: type,
      snapshot,
      step_index: stepIndex,
      created_at: this.clock.iso(),
    };
    s.snapshots.push(record);
    s.state.confidence = snapshot.confidence;
    if (snapshot.solution_summary) s.state.solution_summary = snapshot.solution_summary;
    this.recorder.saveSnapshot(s.session_id, record);
    this.emit({ type: "perception", mode: type, snapshot });
  }

  /** A new plan version only when the plan text changes; moving to the next step of the same plan is not one. */
  adoptPlan(s: AgentSession, d: DecisionOutput, reason: PlanReason, trigger: string): void {
    const plan = nextPlanVersion(s, d, reason, trigger, this.clock.iso());
    if (!plan) return;
    s.plan_versions.push(plan);
    this.recorder.savePlanVersion(s.session_id, plan);
    this.emit({ type: "plan", plan });
  }

  beginStep(s: AgentSession, d: StepDecision): Step {
    const plan = currentPlan(s)!;
    const step = newStep(s, d);
    s.steps.push(step);
    plan.steps.push(step.index);
    this.recorder.saveStep(s.session_id, step);
    this.recorder.savePlanVersion(s.session_id, plan);
    this.emit({ type: "step_start", step });
    return step;
  }

  saveStep(s: AgentSession, step: Step): void {
    this.recorder.saveStep(s.session_id, step);
  }

  finishStep(s: AgentSession, step: Step, status: Step["status"]): void {
    step.status = status;
    this.recorder.saveStep(s.session_id, step);
    this.emit({ type: "step_end", step });
  }

  finish(s: AgentSession): void {
    this.recorder.finishSession(s);
    this.emit({ type: "session_end", session: s });
  }
}
