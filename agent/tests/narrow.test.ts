/** A narrow agent reaches the resources of its own servers only, as it reaches their tools only. */
import { describe, expect, it } from "vitest";
import { InProcessToolHost, mathTools, type Namespaces } from "../../action/index.js";
import type { ToolHost, ToolInfo } from "../../core/index.js";
import { narrowHost, narrowServices } from "../team/index.js";

const host = new InProcessToolHost([
  ...mathTools(),
  { server: "docs", name: "search", inputSchema: { type: "object", properties: {} }, handler: () => [] },
]);
const all = [
  { server: "math", uri: "math://constants" },
  { server: "docs", uri: "docs://secret" },
];
const services: Namespaces = {
  memory: { search: async () => ["hit"] },
  resources: {
    list: async ([server]) => all.filter((r) => server === undefined || r.server === server),
    read: async ([server, uri]) => ({ server, uri, contents: [{ text: "x" }] }),
  },
};

describe("narrowServices", () => {
  const narrow = narrowServices(services, host, "calc", ["math.*"])!;

  it("lists and reads only the resources of servers the agent has tools on", async () => {
    expect(await narrow.resources!.list!([])).toEqual([{ server: "math", uri: "math://constants" }]);
    expect(await narrow.resources!.read!(["math", "math://constants"])).toMatchObject({
      uri: "math://constants",
    });
  });

  it("refuses another server's resources with TOOL_NOT_ALLOWED, naming its own", async () => {
    await expect(narrow.resources!.read!(["docs", "docs://secret"])).rejects.toMatchObject({
      code: "TOOL_NOT_ALLOWED",
      message: expect.stringMatching(/only of its own servers \(math\), not docs/),
    });
    await expect(narrow.resources!.list!(["docs"])).rejects.toMatchObject({ code: "TOOL_NOT_ALLOWED" });
  });

  it("leaves memory as it is", async () => {
    expect(await narrow.memory!.search!(["q"])).toEqual(["hit"]);
  });
});

describe("narrowHost", () => {
  const info = (server: string, name: string): ToolInfo => ({
    server,
    name,
    qualified: `${server}.${name}`,
    unique: true,
    description: "",
    inputSchema: { type: "object" },
  });
  let list = [info("math", "add"), info("docs", "search")];
  const hub: ToolHost = { tools: () => list, onCall: () => () => {}, call: async () => null };

  it("gives an agent the same array while the hub's list is the same, across sessions; a new one when it changes", () => {
    const first = narrowHost(hub, "calc", ["math.*"]).tools();
    expect(first.map((t) => t.qualified)).toEqual(["math.add"]);
    // Another session of the same agent (a new narrow host) shares the array, so the ranker built for it too.
    expect(narrowHost(hub, "calc", ["math.*"]).tools()).toBe(first);
    expect(
      narrowHost(hub, "reader", ["docs.*"])
        .tools()
        .map((t) => t.qualified),
    ).toEqual(["docs.search"]);
    list = [...list, info("math", "multiply")];
    const after = narrowHost(hub, "calc", ["math.*"]).tools();
    expect(after).not.toBe(first);
    expect(after.map((t) => t.qualified)).toEqual(["math.add", "math.multiply"]);
  });
});
