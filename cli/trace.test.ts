/**
 * The live trace through the real CLI: why a session failed (the model's own error after its repair round),
 * each question with who answered it, the query guard's warnings, and one step numbering with the questions
 * and `pda show`. A spinner only on a terminal.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { cliFolder, snap, type CliFolder } from "./harness.js";
import { Spinner } from "./spinner.js";

let cli: CliFolder;
beforeEach(() => {
  cli = cliFolder("pda-trace-");
});
afterEach(() => cli.close());

function script(name: string, body: object): string {
  const file = join(cli.dir, name);
  writeFileSync(file, stringify(body));
  return `scripted:${file}`;
}

const codeStep = (code: string) => ({
  plan_text: ["Step 0: compute", "Step 1: answer"],
  step_index: 0,
  description: "compute",
  type: "CODE",
  code,
});

describe("live trace", () => {
  it("shows the model's error that ended the session, and the question a policy answered", async () => {
    // Every decision reply is unusable: the repair round fails, the loop asks once more, then asks the human.
    const model = script("invalid.yaml", { perception: [snap(false)], decision: [{}, {}, {}, {}] });
    const r = await cli.pda(["run", "What is 2 + 3", "--model", model, "--hil", "policy:fail"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/decision model call failed MODEL_INVALID_OUTPUT: .+/);
    expect(r.stderr).toMatch(/question \(\w+\) .+/);
    expect(r.stderr).toMatch(/answer \S+ — by policy:fail/);
    expect(r.stdout).toBe("");
  });

  it("shows the query guard's warning about a local path that does not exist", async () => {
    const model = script("done.yaml", { perception: [snap(true, "nothing to read")] });
    const r = await cli.pda(["run", `Summarize ${join(cli.dir, "no-such-report.pdf")}`, "--model", model]);
    expect(r.stderr).toMatch(/warning \(query guard\) .*no-such-report\.pdf/);
  });

  it("numbers a step the same in the trace, the question about it and pda show", async () => {
    // The same plan step fails three times (an unknown tool each time), then the policy is asked.
    const failing = codeStep("return await no_such_tool({});");
    const model = script("failing.yaml", {
      perception: [snap(false), snap(false), snap(false), snap(false)],
      decision: [failing, failing, failing],
    });
    const r = await cli.pda(["run", "What is 2 + 3", "--model", model, "--hil", "policy:fail", "--json"]);
    const session = JSON.parse(r.stdout) as { session_id: string };
    const trace = await cli.pda(["run", "What is 2 + 3", "--model", model, "--hil", "policy:fail"]);
    const steps = [...trace.stderr.matchAll(/^step (\d+) CODE compute(.*)$/gm)];
    expect(steps.map((m) => m[1])).toEqual(["0", "1", "2"]);
    expect(steps[2]![2]).toMatch(/plan step 0, attempt 3/);
    const question = /^question \(tool_failure at step (\d+)\) step (\d+) /m.exec(trace.stderr);
    expect(question?.slice(1)).toEqual(["2", "2"]);
    const show = await cli.pda(["show", session.session_id]);
    expect(show.stdout).toMatch(/^step 2 CODE .*attempt 3/m);
    // Not a terminal: nothing animated on stderr.
    expect(trace.stderr).not.toMatch(/\r|⠋|⠙/);
  });
});

describe("spinner", () => {
  function sink(isTTY: boolean) {
    let text = "";
    const out = new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        done();
      },
    }) as Writable & { isTTY?: boolean };
    out.isTTY = isTTY;
    return { out: out as unknown as NodeJS.WriteStream, text: () => text };
  }

  it("shows the label and the elapsed time on a terminal, and clears its line when stopped", async () => {
    const s = sink(true);
    const spinner = new Spinner(s.out);
    spinner.start("decision model (gemini:flash)");
    expect(spinner.active).toBe(true);
    await expect
      .poll(() => s.text(), { timeout: 10_000 })
      .toMatch(/decision model \(gemini:flash\) \d+\.\d s/);
    spinner.stop();
    expect(s.text().endsWith("\r\x1b[K")).toBe(true);
  });

  it("writes nothing when not a terminal", () => {
    const s = sink(false);
    const spinner = new Spinner(s.out);
    spinner.start("decision model");
    expect(spinner.active).toBe(false);
    spinner.around(() => undefined);
    spinner.stop();
    expect(s.text()).toBe("");
  });
});
