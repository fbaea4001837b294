/** Where a person can be asked, from which of stdin, stdout and stderr are terminals. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findTerminal } from "./tty.js";

const dir = mkdtempSync(join(tmpdir(), "pda-tty-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// A file stands in for an openable controlling terminal; a missing path for a process without one.
const openable = join(dir, "tty");
writeFileSync(openable, "");
const missing = join(dir, "no-tty");

const std = (stdin: boolean, stdout: boolean, stderr: boolean) => ({
  stdin: { isTTY: stdin },
  stdout: { isTTY: stdout },
  stderr: { isTTY: stderr },
});

describe("findTerminal", () => {
  it("uses stdin and stdout when both are terminals", () => {
    expect(findTerminal(std(true, true, false), missing)).toBe("stdio");
  });

  it("asks at the controlling terminal when stdout (or stdin) is redirected", () => {
    expect(findTerminal(std(true, false, true), openable)).toBe("tty");
    expect(findTerminal(std(false, true, true), openable)).toBe("tty");
  });

  it("falls back to stdin and stderr without a controlling terminal", () => {
    expect(findTerminal(std(true, false, true), missing)).toBe("stderr");
    expect(findTerminal(std(false, false, true), missing)).toBeUndefined();
  });

  it("asks nobody when none of the three is a terminal, even with a controlling terminal", () => {
    expect(findTerminal(std(false, false, false), openable)).toBeUndefined();
  });
});
