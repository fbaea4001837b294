/**
 * The hub's side of sampling, with a real stdio server whose tool asks the client's model: pda offers the
 * capability, refuses with a reason until a model is attached, honours `sampling: deny`, and hands the request
 * (with the server's policy) to the attached handler. Approval, budgets and logging: tests/e2e/sampling.test.ts.
 */
import { afterEach, expect, it } from "vitest";
import { MultiMCP, type SamplingHandler } from "../index.js";
import { SAMPLING_SERVER } from "./helpers.js";

let hub: MultiMCP | undefined;
afterEach(async () => {
  await hub?.close();
  hub = undefined;
});

const start = (sampling?: "ask" | "allow" | "deny") =>
  MultiMCP.start({
    servers: [{ id: "s", command: process.execPath, args: [SAMPLING_SERVER], ...(sampling && { sampling }) }],
  });

const ask = (h: MultiMCP) => h.call("s.ask_model", { question: "2 + 2?" });

it("without a model attached, a sampling request is refused with a reason, not 'Method not found'", async () => {
  hub = await start();
  await expect(ask(hub)).rejects.toThrow(/sampling failed: .*no model is attached to this hub/);
});

it("hands the request and the server's policy to the handler, and the server gets its answer", async () => {
  hub = await start("allow");
  const seen: unknown[] = [];
  const handler: SamplingHandler = async (server, request, { policy }) => {
    seen.push({ server, policy, text: request.messages[0]!.content, maxTokens: request.maxTokens });
    return { role: "assistant", content: { type: "text", text: "4" }, model: "test-model" };
  };
  hub.setSamplingHandler(handler);
  const events: unknown[] = [];
  hub.onEvent((e) => e.type === "sampling" && events.push(e));
  expect(await ask(hub)).toEqual({ answer: "4", model: "test-model" });
  expect(seen).toEqual([
    { server: "s", policy: "allow", text: { type: "text", text: "2 + 2?" }, maxTokens: 200 },
  ]);
  expect(events).toEqual([{ type: "sampling", server: "s", ok: true, model: "test-model" }]);
});

it("`sampling: deny` refuses without asking the handler", async () => {
  hub = await start("deny");
  let asked = 0;
  hub.setSamplingHandler(async () => {
    asked++;
    throw new Error("not reached");
  });
  await expect(ask(hub)).rejects.toThrow(/sampling is denied for server "s" in the hub config/);
  expect(asked).toBe(0);
});
