/** What the loop reports as it runs: the CLI's live trace and tests subscribe to these. */
import type {
  AgentReport,
  AgentSession,
  HumanInput,
  PerceptionSnapshot,
  PlanVersion,
  SnapshotType,
  Step,
  ToolCallRecord,
} from "../../core/index.js";

export type LoopEvent =
  | { type: "session_start"; session_id: string; query: string }
  | { type: "perception"; mode: SnapshotType; snapshot: PerceptionSnapshot }
  | { type: "plan"; plan: PlanVersion }
  | { type: "step_start"; step: Step }
  | { type: "log"; line: string }
  | { type: "tool_call"; record: ToolCallRecord }
  | { type: "step_end"; step: Step }
  | { type: "session_end"; session: AgentSession }
  // A model call under way, and how it ended: the error is the cause once retries and the repair round are spent.
  | { type: "model_start"; role: string; provider: string; model: string }
  | { type: "model_end"; role: string; ok: boolean; ms: number; error?: string }
  // A question to the person (or the script or policy answering for them), then its answer and who gave it.
  | { type: "human_ask"; kind: string }
  | { type: "human_input"; input: HumanInput }
  // Something a check found that did not stop the session, e.g. the query guard's "this path does not exist".
  | { type: "warning"; source: string; message: string }
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
      /** The step ran again and got the report of the session its earlier run started (nothing ran now). */
      replayed?: true;
    }
  | { type: "handoff"; session_id: string; from: string; to: string; reason: string };
