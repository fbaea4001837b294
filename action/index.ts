/**
 * action/: runs a CODE step in a QuickJS (WebAssembly) sandbox against a ToolHost and returns an
 * ExecutionResult. The public door of the folder. Each engine lives in a worker thread of its own (engine.ts,
 * worker.ts, vm.ts; protocol.ts between them); the host side of a step stays on the caller's thread
 * (sandbox.ts), so a step that computes holds up neither Ctrl-C nor other sessions.
 *
 * Inside a step (a context as fresh as a new one: warm.ts writes the engine's memory image back after each; prelude.ts):
 * - every tool is an async function (names: core/tool-names.ts): `add(1, 2)` when its name is unique, always
 *   `math.add(...)`, and `server["get-weather"](...)` / `get_weather(...)` for names that are not free
 *   identifiers (aliases never replace a built-in); `callTool(name, ...)` takes any name. Arguments: one plain object = named, otherwise positional in the schema's property order
 *   (args.ts; core's `toolSignature` shows it); checked against the input schema, defaults filled in.
 * - a failed call throws `ToolError {tool, code, message}`; uncaught, its code is the step's error code.
 * - `parallel([() => a(), () => b()])`, `console.log/info/warn/error/debug`, top-level `await` and `return`.
 * - host namespaces (`options.namespaces`) appear as `name.fn(...)`; a tool of the same name wins; each call
 *   counts against max_tool_calls (not recorded in tool_calls).
 * Values cross as tagged JSON (codec.ts): `value` of an ok result is that JSON; `decodeValue` revives it.
 * Limits (SandboxLimits) end the step with SANDBOX_TIMEOUT | SANDBOX_MEMORY | SANDBOX_STACK |
 * SANDBOX_TOOL_LIMIT | SANDBOX_RESULT_TOO_LARGE | SANDBOX_LOG_TOO_LARGE; also SANDBOX_SYNTAX (line/column in
 * the model's code), SANDBOX_RUNTIME, SANDBOX_CANCELLED, and TOOL_* / SERVER_* from an uncaught ToolError.
 *
 * Known bounds: stack_bytes is capped at MAX_STACK_BYTES (Node's native stack); a native built-in working on
 * data as large as the memory limit (sorting 60 MB of bytes) would overrun timeout_ms, since QuickJS checks the
 * clock only between bytecodes: its thread is terminated STOP_GRACE_MS (250 ms) after the deadline or a cancel.
 */
export { runCode, MAX_STACK_BYTES, type RunOptions, type Namespaces } from "./sandbox.js";
export { decode, decodeValue, encode, Opaque, TAG } from "./codec.js";
export { InProcessToolHost, mathTools, type InProcessTool } from "./testing.js";
export { sandboxCpuMs } from "./engine.js";
