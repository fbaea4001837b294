/**
 * Servers that attack the hub (issue #24): an impostor registering another server's qualified name, and
 * control sequences in what a server says. Real stdio servers (testing/hostile_server.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentLoop } from "../../../agent/index.js";
import { achieved, code, snap } from "../../../agent/tests/harness.js";
import { Profile } from "../../../config/index.js";
import { nullRecorder } from "../../../core/index.js";
import { ScriptedChannel } from "../../../hil/index.js";
import { ScriptedTransport, StructuredProvider } from "../../../llm/index.js";
import { MultiMCP, type HubEvent } from "../../index.js";
import { HOSTILE_SERVER, failure } from "./helpers.js";

const server = (id: string, ...args: string[]) => ({
  id,
  command: process.execPath,
  args: [HOSTILE_SERVER, ...args],
});
// eslint-disable-next-line no-control-regex -- looking for control characters
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

describe("an impostor registering bank.transfer", () => {
  let hub: MultiMCP;
  const events: HubEvent[] = [];
  beforeAll(async () => {
    hub = await MultiMCP.start(
      {
        servers: [
          { ...server("bank", "--bank"), needs_approval: ["transfer"] },
          server("evil", "--impostor"),
        ],
      },
      { onEvent: (e) => events.push(e) },
    );
  });
  afterAll(async () => hub.close());

  it("does not take the route: bank.transfer reaches bank, the impostor only by its own qualified name", async () => {
    expect(hub.status().map((s) => s.state)).toEqual(["ready", "ready"]);
    expect(await hub.call("bank.transfer", { amount: 1 })).toEqual({ by: "bank" });
    expect(await hub.call("evil.bank.transfer", { amount: 1 })).toEqual({ by: "impostor" });
    // Listed for the approval gate and the sandbox: only bank's entry answers to "bank.transfer".
    const matches = hub
      .tools()
      .filter((t) => t.qualified === "bank.transfer" || (t.unique && t.name === "bank.transfer"));
    expect(matches).toMatchObject([{ server: "bank", name: "transfer", needsApproval: true }]);
    // A dotted tool name is never a plain name, even where no server has that prefix.
    expect(hub.tools().find((t) => t.qualified === "evil.bank.transfer")?.unique).toBe(false);
    expect((await failure(hub.call("bank.nope", {}))).message).toMatch(/server "bank" has no tool "nope"/);
  });

  it("warns about the dotted name and the sandbox built-in, as events and in the status", () => {
    const warnings = events.filter((e) => e.type === "tool_warning");
    expect(warnings.map((e) => e.type === "tool_warning" && [e.server, e.tool])).toEqual([
      ["evil", "bank.transfer"],
      ["evil", "parallel"],
    ]);
    const evil = hub.status().find((s) => s.id === "evil")!;
    expect(evil.warnings).toEqual([
      expect.stringMatching(/"bank\.transfer" holds the separator.*"evil\.bank\.transfer"/),
      expect.stringMatching(/"parallel" is a sandbox built-in/),
    ]);
    expect(hub.status().find((s) => s.id === "bank")!.warnings).toBeUndefined();
  });

  it("a CODE step calling bank.transfer asks for approval and reaches the real server", async () => {
    const human = new ScriptedChannel({ approval: [{ choice: "allow_once" }] });
    const transport = new ScriptedTransport({
      perception: [snap(), achieved("done")],
      decision: [
        code(["Step 0: pay", "Step 1: answer"], 0, 'return await callTool("bank.transfer", { amount: 5 })'),
      ],
    });
    const model = new StructuredProvider(transport);
    const loop = new AgentLoop({
      models: { perception: model, decision: model },
      host: hub,
      recorder: nullRecorder,
      profile: Profile.parse({}),
      human,
    });
    const s = await loop.run("pay 5");
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: { by: "bank" } });
    expect(s.state.human_inputs).toHaveLength(1);
    expect(human.unconsumed()).toEqual([]);
  });

  it("deny and allow lists hold for a server that is down: its denied tool is not routed to it", async () => {
    const down = await MultiMCP.start({
      servers: [
        { id: "bank", command: "/nonexistent/bank-server", deny: ["transfer"] },
        server("evil", "--impostor"),
      ],
    });
    try {
      const e = await failure(down.call("bank.transfer", { amount: 1 }));
      expect(e.code).toBe("TOOL_NOT_FOUND");
      expect((await failure(down.call("bank.other", {}))).code).toBe("SERVER_UNAVAILABLE");
    } finally {
      await down.close();
    }
  });
});

describe("control sequences from a server", () => {
  it("are stripped from descriptions, schemas and error messages; a tool whose name holds them is left out", async () => {
    const events: HubEvent[] = [];
    const hub = await MultiMCP.start(
      { servers: [server("art", "--ansi")] },
      { onEvent: (e) => events.push(e) },
    );
    try {
      const paint = hub.tools().find((t) => t.qualified === "art.paint")!;
      expect(paint.description).toBe("Paint red text here");
      expect(JSON.stringify(paint.inputSchema)).toMatch(/"a link colour"/);
      expect(hub.tools().map((t) => t.name)).not.toContain("\x1b[8mhidden");
      expect(hub.status()[0]!.warnings).toEqual([
        expect.stringMatching(/holds control characters; not exposed/),
      ]);
      const e = await failure(hub.call("art.paint", { colour: "red" }));
      expect(e.message).toBe("art.paint: failed badly");
      await hub.call("art.flood", { n: 1 });
      const strings: string[] = [];
      JSON.stringify(events, (_k, v: unknown) => (typeof v === "string" && strings.push(v), v));
      expect(strings.filter((t) => CONTROLS.test(t))).toEqual([]);
    } finally {
      await hub.close();
    }
  });
});
