import { describe, expect, it } from "vitest";
import type { ToolInfo } from "../../core/index.js";
import { renderTools } from "../index.js";

const tool = (server: string, name: string): ToolInfo => ({
  server,
  name,
  qualified: `${server}.${name}`,
  unique: true,
  description: `${name} tool`,
  inputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
});

describe("renderTools", () => {
  it("shows a tool by the name its list gives it, also after rendering it in another list", () => {
    const x = tool("s", "x");
    // Alone, the tool is the global x; beside a server named x, that name is the server's and it is x_2.
    expect(renderTools([x])).toBe("- x(n: number) [s.x] — x tool");
    const beside = [x, tool("x", "y")];
    expect(renderTools(beside).split("\n")[0]).toBe("- x_2(n: number) [s.x] — x tool");
    expect(renderTools([x])).toBe("- x(n: number) [s.x] — x tool");
  });
});
