/**
 * `redact:` in profiles.yaml at the command line: the profile's extra patterns reach the store a run writes to,
 * and a bad pattern is a config error naming the file, line and field.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFolder, snap, type CliFolder } from "./harness.js";

let cli: CliFolder;
beforeAll(() => {
  cli = cliFolder("pda-cli-redact-");
  writeFileSync(
    join(cli.dir, "script.yaml"),
    stringify({ perception: [snap(true, "order ACME-123456 is late")] }),
  );
});
afterAll(() => cli.close());

const profiles = (redact: unknown) =>
  writeFileSync(join(cli.config, "profiles.yaml"), stringify({ default: "p", profiles: { p: { redact } } }));

describe("pda run with a profile's redact patterns", () => {
  it("stores matches of the profile's patterns redacted, beside the built-in rules", async () => {
    profiles(["ACME-[0-9]{6}"]);
    const r = await cli.pda([
      "run",
      "where is order ACME-123456? my password=Tr0ub4dorXq",
      "--model",
      `scripted:${join(cli.dir, "script.yaml")}`,
      "--json",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const db = new Database(join(cli.dir, "pda.db"), { readonly: true });
    try {
      const row = db.prepare("SELECT original_query, solution_summary, session_json FROM sessions").get() as {
        original_query: string;
        solution_summary: string;
        session_json: string;
      };
      expect(row.original_query).toBe("where is order [REDACTED:pattern]? my password=[REDACTED:password]");
      expect(row.solution_summary).toBe("order [REDACTED:pattern] is late");
      expect(row.session_json).not.toMatch(/ACME-123456|Tr0ub4dorXq/);
    } finally {
      db.close();
    }
  });

  it("refuses a pattern that is not a regular expression, naming the file, line and field", async () => {
    profiles(["ok-[0-9]+", "(unclosed"]);
    const r = await cli.pda(["run", "q", "--model", `scripted:${join(cli.dir, "script.yaml")}`]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/profiles\.yaml:\d+: profiles\.p\.redact\.1: not a valid regular expression/);
  });
});
