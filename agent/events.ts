/** What the loop reports as it runs: the CLI's live trace and tests subscribe to these. */
import type {
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
  | { type: "session_end"; session: AgentSession };
