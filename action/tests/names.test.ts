/**
 * Tool and server names in sandbox code (#24 item 2): built-ins cannot be replaced by a tool or a server, and a
 * name that is not a free identifier gets an alias that the sandbox, the code guard and the prompt all agree on.
 */
import { describe, expect, it } from "vitest";
import { jsNames } from "../../core/index.js";
import { renderTools } from "../../decision/index.js";
import { guardCode } from "../../heuristics/index.js";
import { InProcessToolHost, type InProcessTool } from "../testing.js";
import { runCode } from "../index.js";
import { limits } from "./helpers.js";

const echo = (server: string, name: string): InProcessTool => ({
  server,
  name,
  inputSchema: { type: "object", properties: { x: { type: "number" } } },
  handler: ({ x }) => `${server}.${name}:${String(x)}`,
});

/** Tools named like the sandbox's built-ins, servers named like them, and names that are not identifiers. */
function hostileHost(): InProcessToolHost {
  return new InProcessToolHost([
    echo("s", "parallel"),
    echo("s", "callTool"),
    echo("s", "ToolError"),
    echo("s", "console"),
    echo("s", "lint-files"),
    echo("s", "a.b"),
    echo("s", "delete"),
    echo("console", "log"),
    echo("parallel", "run"),
    echo("my-server", "go"),
  ]);
}

describe("jsNames (core/tool-names.ts)", () => {
  it("aliases what is not a free identifier, keeps the rest, and never repeats a name", () => {
    const host = hostileHost();
    const n = jsNames(host.tools(), ["probe"]);
    const call = (q: string) => n.tools.get(q)!.call;
    expect(call("s.parallel")).toBe("parallel_3");
    expect(call("s.callTool")).toBe("callTool_2");
    expect(call("s.ToolError")).toBe("ToolError_2");
    expect(call("s.console")).toBe("console_3");
    expect(call("s.lint-files")).toBe("lint_files");
    expect(call("s.a.b")).toBe("a_b");
    expect(call("s.delete")).toBe("delete_2");
    expect(n.groups.get("console")).toBe("console_2");
    expect(n.groups.get("parallel")).toBe("parallel_2");
    expect(n.groups.get("my-server")).toBe("my_server");
    expect(n.groups.get("probe")).toBe("probe");
    expect(n.tools.get("s.lint-files")!.member).toBe("lint_files");
    expect(n.tools.get("s.delete")!.member).toBe("delete");
    const globals = [
      ...n.groups.values(),
      ...[...n.tools.values()].flatMap((t) => (t.global ? [t.global] : [])),
    ];
    expect(new Set(globals).size).toBe(globals.length);
  });
});

describe("names in the sandbox", () => {
  it("built-ins stay built-ins; every tool is callable by its alias and by server[raw name]", async () => {
    const r = await runCode(
      `const all = await parallel([() => 1, () => 2]);
      console.log("still the console");
      const e = new ToolError("TOOL_X", "t", "m");
      return [all, e instanceof Error, await parallel_3(1), await callTool_2(2), await ToolError_2(3),
        await console_3(4), await lint_files(5), await a_b(6), await delete_2(7), await s["lint-files"](8),
        await s.lint_files(9), await s["a.b"](10), await s.delete(11), await console_2.log(12),
        await parallel_2.run(13), await my_server.go(14), await callTool("s.lint-files", 15)]`,
      hostileHost(),
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.logs).toEqual(["still the console"]);
    expect(r.value).toEqual([
      [1, 2],
      true,
      "s.parallel:1",
      "s.callTool:2",
      "s.ToolError:3",
      "s.console:4",
      "s.lint-files:5",
      "s.a.b:6",
      "s.delete:7",
      "s.lint-files:8",
      "s.lint-files:9",
      "s.a.b:10",
      "s.delete:11",
      "console.log:12",
      "parallel.run:13",
      "my-server.go:14",
      "s.lint-files:15",
    ]);
  });

  // The prelude assigns tools onto their server's object (cheaper than defineProperty) except __proto__,
  // which an assignment would take as the object's prototype.
  it("tools named like Object.prototype's keys, __proto__ too, are own members of their server", async () => {
    const names = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];
    const r = await runCode(
      `const out = [];
      for (const k of ${JSON.stringify(names)}) out.push(Object.prototype.hasOwnProperty.call(odd, k), await odd[k](1));
      return [...out, Object.getPrototypeOf(odd) === Object.prototype, Object.keys(odd).length]`,
      new InProcessToolHost(names.map((n) => echo("odd", n))),
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual([...names.flatMap((n) => [true, `odd.${n}:1`]), true, names.length]);
  });

  it("the prompt shows the names the sandbox binds, and the code guard accepts them", async () => {
    const host = hostileHost();
    const prompt = renderTools(host.tools());
    for (const shown of [
      "- parallel_3(x?: number) [s.parallel]",
      "- lint_files(x?: number) [s.lint-files]",
      "- log(x?: number) [console.log]",
    ])
      expect(prompt).toContain(shown);
    const code =
      "return [await lint_files(1), await console_2.log(2), await s['lint-files'](3), await parallel([])]";
    expect(guardCode(code, host.tools()).ok).toBe(true);
    expect((await runCode(code, host, limits())).value).toEqual([
      "s.lint-files:1",
      "console.log:2",
      "s.lint-files:3",
      [],
    ]);
    const wrong = await runCode("return await lint_files('x')", host, limits());
    expect(wrong.error?.message).toContain("signature: lint_files(x?: number)");
  });
});

describe("a ToolError the step's code throws", () => {
  it("keeps one of ToolError's codes and turns any other code into TOOL_ERROR", async () => {
    const thrown = async (code: string) =>
      (
        await runCode(
          `throw new ToolError(${JSON.stringify(code)}, "s.t", "went wrong");`,
          new InProcessToolHost([]),
          limits(),
        )
      ).error;
    expect(await thrown("SERVER_CRASHED")).toMatchObject({
      code: "SERVER_CRASHED",
      tool: "s.t",
      message: "went wrong",
    });
    expect(await thrown("TOOL_TIMEOUT")).toMatchObject({ code: "TOOL_TIMEOUT" });
    expect(await thrown("TOOL_MADE_UP")).toMatchObject({ code: "TOOL_ERROR", message: "went wrong" });
    expect(await thrown("lower_case")).toMatchObject({ code: "TOOL_ERROR" });
  });
});
