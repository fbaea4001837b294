/** What the loop reports as it runs: the CLI's live trace and tests subscribe to these. */
import type {
  AgentReport,
  AgentSession,
  PerceptionSnapshot,
  PlanVersion,
  SnapshotType,
  Step,
  ToolCallRecord,
} from "../core/index.js";

export type LoopEvent =
  | { type: "session_start"; session_id: string; query: string }
  | { type: "perception"; mode: SnapshotType; snapshot: PerceptionSnapshot }
  | { type: "plan"; plan: PlanVersion }
  | { type: "step_start"; step: Step }
  | { type: "log"; line: string }
  | { type: "tool_call"; record: ToolCallRecord }
  | { type: "step_end"; step: Step }
  | { type: "session_end"; session: AgentSession }
  // Agent teams (agent/team.ts): a sub-agent called from CODE, its own loop's events, its report; handoffs.
  | { type: "agent_start"; agent: string; session_id: string; parent_session_id: string; task: string }
  | { type: "agent_event"; agent: string; session_id: string; event: LoopEvent }
  | {
      type: "agent_end";
      agent: string;
      session_id: string;
      parent_session_id: string;
      report: AgentReport;
      tool_calls_used: number;
    }
  | { type: "handoff"; session_id: string; from: string; to: string; reason: string };
