/** Shell completion through the real CLI: the scripts, and the candidates a script asks for on Tab. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFolder, type CliFolder } from "./harness.js";

let cli: CliFolder;
beforeAll(() => {
  cli = cliFolder("pda-completion-");
});
afterAll(() => cli.close());

describe("pda completion", () => {
  it("prints a script for bash, zsh and fish that calls `pda complete`", async () => {
    for (const shell of ["bash", "zsh", "fish"]) {
      const r = await cli.pda(["completion", shell]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("pda complete");
    }
  }, 60_000);

  it("completes command names, and a command's options", async () => {
    const commands = await cli.pda(["complete", "--", "ba"]);
    expect(commands.code, commands.stderr).toBe(0);
    expect(commands.stdout.split("\n").map((l) => l.split("\t")[0])).toContain("batch");
    const options = await cli.pda(["complete", "--", "run", "--qu"]);
    expect(options.stdout).toMatch(/^--quiet\t/m);
  }, 60_000);

  it("an unknown shell exits 2 naming it and the shells known", async () => {
    const r = await cli.pda(["completion", "tcsh"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown shell "tcsh" (known: bash, zsh, fish, powershell)');
  }, 30_000);
});
