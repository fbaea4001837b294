/** What a person reads when a resumed step asks about a call in doubt. */
import { Chalk } from "chalk";
import { describe, expect, it } from "vitest";
import { renderQuestion } from "../render.js";

const plain = new Chalk({ level: 0 });
const call = { kind: "in_doubt", tool: "rotate", server: "vault", args: { id: 7 } } as const;

describe("an in-doubt question", () => {
  it("says the call may or may not have happened when no outcome was logged", () => {
    const text = renderQuestion(call, { chalk: plain });
    expect(text).toContain("the step sent vault.rotate with:");
    expect(text).toContain("may or may not have happened");
  });

  it("says the call happened when only its result was not kept", () => {
    const text = renderQuestion({ ...call, happened: true }, { chalk: plain });
    expect(text).toContain("the step made vault.rotate with:");
    expect(text).toContain("It happened, but its result was not kept");
    expect(text).not.toContain("may or may not");
  });
});
