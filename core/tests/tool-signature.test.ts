import { describe, expect, it } from "vitest";
import { toolSignature, type ToolInfo } from "../index.js";

const tool = (properties: Record<string, unknown>, required: string[] = []): ToolInfo => ({
  server: "s",
  name: "t",
  qualified: "s.t",
  unique: true,
  description: "",
  inputSchema: { type: "object", properties, required },
});

describe("toolSignature", () => {
  it("spells out enums, consts and unions the way third-party servers write them", () => {
    const sig = toolSignature(
      tool(
        {
          colorScheme: { anyOf: [{ type: "string", enum: ["light", "dark"] }, { type: "null" }] },
          mode: { oneOf: [{ const: "fast" }, { const: "slow" }] },
          size: { anyOf: [{ type: "integer" }, { type: "string" }] },
          tags: { type: "array", items: { anyOf: [{ type: "string" }, { type: "number" }] } },
          anything: { anyOf: [{ type: "string" }, {}] },
          n: { type: ["number", "null"] },
        },
        ["mode"],
      ),
    );
    expect(sig).toBe(
      's.t(colorScheme?: "light" | "dark" | null, mode: "fast" | "slow", size?: integer | string, ' +
        "tags?: (string | number)[], anything?: any, n?: number | null)",
    );
  });

  it("keeps the plain shapes as they were", () => {
    expect(toolSignature(tool({ a: { type: "number" }, b: { type: "number" } }, ["a", "b"]), "add")).toBe(
      "add(a: number, b: number)",
    );
    expect(toolSignature(tool({ xs: { type: "array", items: { type: "string" } }, o: {} }))).toBe(
      "s.t(xs?: string[], o?: any)",
    );
  });
});
