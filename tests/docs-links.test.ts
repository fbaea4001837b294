/** README.md and docs/ link only to files in the repository (the design lives in docs/design.md). */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../core/index.js";

/** Relative link targets of a Markdown file, anchors dropped. */
function localLinks(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!.split("#")[0]!)
    .filter((l) => l && !/^[a-z]+:/i.test(l));
}

describe("documentation links", () => {
  it.each(["README.md", "docs/design.md", "docs/robot/README.md"])(
    "%s links only to files that exist",
    (rel) => {
      const file = join(PACKAGE_ROOT, rel);
      const missing = localLinks(file).filter((l) => !existsSync(join(dirname(file), l)));
      expect(missing).toEqual([]);
    },
  );

  it("README names the design in the repository, not a file outside it", () => {
    const readme = readFileSync(join(PACKAGE_ROOT, "README.md"), "utf8");
    expect(readme).toContain("docs/design.md");
    expect(readme).not.toMatch(/\.\.\/shared|issue notes/);
  });
});
