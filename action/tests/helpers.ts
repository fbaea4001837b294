/** Shared set-up of the sandbox tests: limits with overrides and an in-process tool host. */
import { SandboxLimits } from "../../config/index.js";
import { ToolError } from "../../core/index.js";
import { InProcessToolHost, mathTools, type InProcessTool } from "../testing.js";

export function limits(overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  return SandboxLimits.parse({ timeout_ms: 5_000, memory_bytes: 32 << 20, ...overrides });
}

/** Tools beyond math for the calling-convention tests. */
export function extraTools(): InProcessTool[] {
  return [
    {
      server: "text",
      name: "echo",
      description: "returns its arguments as received",
      inputSchema: {
        type: "object",
        properties: {
          text: { type: "string" },
          times: { type: "integer", default: 1 },
          loud: { type: "boolean" },
        },
        required: ["text"],
      },
      handler: (args) => args,
    },
    {
      server: "text",
      name: "configure",
      description: "one object-typed parameter",
      inputSchema: {
        type: "object",
        properties: { options: { type: "object", properties: { depth: { type: "integer" } } } },
        required: ["options"],
      },
      handler: (args) => args,
    },
    {
      server: "text",
      name: "get-weather",
      description: "a name that is not a JavaScript identifier",
      inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      handler: ({ city }) => `sunny in ${String(city)}`,
    },
    {
      server: "text",
      name: "format",
      description: "same name as other.format: callable only as text.format",
      inputSchema: { type: "object", properties: { value: { type: "number" } } },
      handler: ({ value }) => `text:${String(value)}`,
    },
    {
      server: "other",
      name: "format",
      description: "same name as text.format: callable only as other.format",
      inputSchema: { type: "object", properties: { value: { type: "number" } } },
      handler: ({ value }) => `other:${String(value)}`,
    },
    {
      server: "data",
      name: "rich",
      description: "returns values JSON cannot carry",
      inputSchema: { type: "object", properties: {} },
      handler: () => ({
        when: new Date("2024-05-06T07:08:09.000Z"),
        big: 2n ** 70n,
        bytes: new Uint8Array([0, 1, 254, 255]),
        nothing: undefined,
        nan: Number.NaN,
        $pda: "a literal key",
      }),
    },
    {
      server: "data",
      name: "slow",
      description: "answers after `ms` milliseconds",
      inputSchema: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] },
      handler: ({ ms }, { signal }) =>
        new Promise((resolve, reject) => {
          const t = setTimeout(() => resolve(ms), ms as number);
          signal?.addEventListener("abort", () => {
            clearTimeout(t);
            reject(new ToolError("TOOL_CANCELLED", "data.slow", "data.slow: cancelled"));
          });
        }),
    },
    {
      server: "data",
      name: "crash",
      description: "throws a plain Error (not a ToolError)",
      inputSchema: { type: "object", properties: {} },
      handler: () => {
        throw new Error("disk on fire");
      },
    },
  ];
}

export function testHost(): InProcessToolHost {
  return new InProcessToolHost([...mathTools(), ...extraTools()]);
}
