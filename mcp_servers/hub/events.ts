/** What the hub tells its listeners besides finished calls (those go to onCall as ToolCallRecord). */
/** "cached": not started, its tools known from the tool-list cache; it starts at the first call of one. */
export type ServerState = "disabled" | "cached" | "connecting" | "ready" | "crashed" | "failed" | "closed";

export type HubEvent =
  | {
      type: "server_state";
      server: string;
      state: ServerState;
      error?: string;
      pid?: number;
      /** On "connecting": which restart this is (absent for the first start). */
      retry?: number;
    }
  /** A server's `notifications/progress` for a call in flight. */
  | { type: "progress"; server: string; tool: string; progress: number; total?: number; message?: string }
  /** A server's `notifications/message` (MCP logging), or a stderr line (level "stderr"). */
  | { type: "log"; server: string; level: string; logger?: string; data: unknown }
  /** A stdout line that was not JSON-RPC (a banner or a broken server). */
  | { type: "garbage"; server: string; line: string }
  | { type: "tools_changed"; server: string; count: number }
  /** A tool name that is a problem: it holds the separator, is a sandbox built-in, or holds controls. */
  | { type: "tool_warning"; server: string; tool: string; message: string }
  | {
      type: "elicitation";
      server: string;
      message: string;
      action: "accept" | "decline" | "cancel";
      reason?: string;
    }
  /** A server's `sampling/createMessage` request, answered by the model or refused (with why). */
  | { type: "sampling"; server: string; ok: boolean; model?: string; reason?: string };

export type HubEventListener = (event: HubEvent) => void;

/** Per-server status for `pda servers` and the loop. */
export interface ServerStatus {
  id: string;
  description: string;
  transport: "stdio" | "http" | "sse";
  state: ServerState;
  tools: number;
  /** The protocol era the server speaks (live session, else cached); absent before it first connected. */
  era?: "legacy" | "modern";
  /** The protocol revision the live session negotiated (e.g. 2025-11-25, 2026-07-28). */
  protocolVersion?: string;
  lastError?: string;
  pid?: number;
  restarts: number;
  /** When the server may next be restarted (ms since epoch), while crashed or failed. */
  retryAt?: number;
  /** Problems with the names of this server's tools (see hub/names.ts). */
  warnings?: string[];
}
