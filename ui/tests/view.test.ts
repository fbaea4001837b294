/** The page's kept results (highlighted code, plan diffs) are keyed by their whole input: never another's. */
import { describe, expect, it } from "vitest";
import { highlight, planDiff } from "../view.js";

describe("kept highlighting and plan diffs", () => {
  it("gives each text its own result, the same again for the same text", () => {
    const a = highlight("return 1;");
    expect(highlight("return 1;")).toBe(a);
    expect(highlight("return 2;")).not.toBe(a);
    expect(highlight("return 2;")).toContain("2");
  });

  it("keeps the two plans of a diff apart: the lines moved from one to the other are another diff", () => {
    expect(planDiff(["a", "b"], ["c"])).toEqual([
      { op: "-", text: "a" },
      { op: "-", text: "b" },
      { op: "+", text: "c" },
    ]);
    expect(planDiff(["a"], ["b", "c"])).toEqual([
      { op: "-", text: "a" },
      { op: "+", text: "b" },
      { op: "+", text: "c" },
    ]);
  });
});
