/** A narrow agent reaches the resources of its own servers only, as it reaches their tools only. */
import { describe, expect, it } from "vitest";
import { InProcessToolHost, mathTools, type Namespaces } from "../../action/index.js";
import { narrowServices } from "../narrow-host.js";

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
