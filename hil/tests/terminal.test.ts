/**
 * The terminal channel through a real terminal: `node dist/hil/demo.js` in tmux, driven by keys, the way a
 * person would. Run `npx tsc -p tsconfig.json` first (npm test does).
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { HumanCancelled, TerminalChannel } from "../index.js";
import { SAMPLE_QUESTIONS } from "../samples.js";
import { withTmux, type TmuxSession } from "./tmux.js";

const DEMO = join(PACKAGE_ROOT, "dist", "hil", "demo.js");
const dir = mkdtempSync(join(tmpdir(), "pda-hil-term-"));

beforeAll(() => {
  if (!existsSync(DEMO)) throw new Error(`${DEMO} is missing: build first (npx tsc -p tsconfig.json)`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The JSON of every `ANSWER ...` line the demo printed. */
async function answers(t: TmuxSession): Promise<unknown[]> {
  const out = await t.output();
  return out
    .split("\n")
    .filter((l) => l.startsWith("ANSWER "))
    .map((l) => JSON.parse(l.slice("ANSWER ".length)));
}

function demo(t: (s: TmuxSession) => Promise<void>, args: string[], env?: Record<string, string>) {
  return withTmux(["node", DEMO, ...args], { cols: 100, rows: 40, cwd: PACKAGE_ROOT, env }, t);
}

describe("terminal channel in tmux", () => {
  it("a tool failure: the person picks 'give the result yourself' and types a value", async () => {
    await demo(
      async (t) => {
        const screen = await t.waitFor("What should the agent do?");
        // The question is readable before anything is chosen: code with line numbers, the error named.
        expect(screen).toContain('> 2 │ const b = await sheet.read({ cell: "B1" });');
        expect(screen).toContain("✖ TOOL_ERROR in sheet.read (line 2): sheet is locked by another user");
        await t.sendKeys("Down", "Down");
        await t.waitFor("Type the value this step should have returned");
        await t.sendKeys("Enter");
        await t.waitFor("The step's result (JSON or text):");
        await t.type("31");
        await t.sendKeys("Enter");
        expect(await t.waitForExit()).toBe(0);
        const [a] = await answers(t);
        expect(a).toMatchObject({
          kind: "tool_failure",
          choice: "give_result",
          value: 31,
          answered_by: "terminal",
        });
        expect(Date.parse((a as { at: string }).at)).not.toBeNaN();
      },
      ["tool_failure"],
    );
  });

  it("a clarification answered with free text, then an approval denied", async () => {
    await demo(
      async (t) => {
        await t.waitFor("Your answer (empty: no answer):");
        await t.type("Paris, France");
        await t.sendKeys("Enter");
        await t.waitFor("Allow this call?");
        await t.waitFor("filesystem.write_file");
        // The cursor starts on Deny; go up to "Allow once" and back down to be sure keys move it.
        await t.sendKeys("Up", "Up");
        await t.waitFor("❯ Allow once");
        await t.sendKeys("Down", "Down");
        await t.waitFor("❯ Deny");
        await t.sendKeys("Enter");
        expect(await t.waitForExit()).toBe(0);
        expect(await answers(t)).toMatchObject([
          { kind: "clarification", choice: "answer", text: "Paris, France", answered_by: "terminal" },
          { kind: "approval", choice: "deny", answered_by: "terminal" },
        ]);
      },
      ["clarification", "approval"],
    );
  });

  it("edit the code: the person's $EDITOR changes it and the new code comes back", async () => {
    const editorScript = join(dir, "editor.sh");
    writeFileSync(editorScript, "#!/bin/sh\nsed -i 's/sheet.read/sheet.readCached/g' \"$1\"\n");
    chmodSync(editorScript, 0o755);
    await demo(
      async (t) => {
        await t.waitFor("What should the agent do?");
        await t.sendKeys("Down", "Enter");
        expect(await t.waitForExit()).toBe(0);
        const [a] = (await answers(t)) as Array<{ choice: string; code: string }>;
        expect(a!.choice).toBe("edit_code");
        expect(a!.code).toContain('await sheet.readCached({ cell: "B1" })');
      },
      ["tool_failure"],
      { EDITOR: editorScript, VISUAL: "" },
    );
  });

  it("an elicitation form: fields prompted by type, a bad value refused, the content typed", async () => {
    await demo(
      async (t) => {
        await t.waitFor("Answer the form?");
        await t.sendKeys("Enter");
        // The form's header lists every field too: wait for the prompt line ("? ..."), since
        // inquirer drops keys typed before its prompt is live.
        await t.waitFor(/^\? Full name/m);
        await t.type("Ada Lovelace");
        await t.sendKeys("Enter");
        await t.waitFor(/^\? email \(email\)/m);
        await t.type("not-an-email");
        await t.sendKeys("Enter");
        await t.waitFor(/Invalid email/i);
        await t.sendKeys("C-u");
        await t.type("ada@example.org");
        await t.sendKeys("Enter");
        await t.waitFor(/^\? seats \(integer 1\.\.9\)/m);
        await t.sendKeys("BSpace");
        await t.type("2");
        await t.sendKeys("Enter");
        await t.waitFor("class (one of economy, business, optional)");
        await t.sendKeys("Down", "Enter");
        await t.waitFor(/^\? Send me offers/m);
        await t.sendKeys("Enter");
        expect(await t.waitForExit()).toBe(0);
        expect(await answers(t)).toEqual([
          {
            kind: "elicitation",
            action: "accept",
            content: {
              name: "Ada Lovelace",
              email: "ada@example.org",
              seats: 2,
              class: "business",
              newsletter: false,
            },
            answered_by: "terminal",
            at: expect.any(String),
          },
        ]);
      },
      ["elicitation"],
    );
  });

  it("Ctrl-C at a prompt is a typed cancellation (HIL_CANCELLED, exit 130)", async () => {
    await demo(
      async (t) => {
        await t.waitFor("Your answer (empty: no answer):");
        await t.type("half an ans");
        await t.sendKeys("C-c");
        expect(await t.waitForExit()).toBe(130);
        expect(await t.output()).toContain(
          'CANCELLED {"code":"HIL_CANCELLED","reason":"interrupt","question_kind":"clarification"}',
        );
        expect(await answers(t)).toEqual([]);
      },
      ["clarification"],
    );
  });

  it("no answer in time: the configured policy answers, and says so", async () => {
    await demo(
      async (t) => {
        await t.waitFor("(no answer in 1s → policy:skip: skip)");
        expect(await t.waitForExit({ timeoutMs: 15_000 })).toBe(0);
        expect(await t.output()).toContain("no answer at the terminal within 1s: policy:skip answers");
        expect(await answers(t)).toMatchObject([
          {
            kind: "tool_failure",
            choice: "skip",
            answered_by: "policy:skip",
            note: "no answer at the terminal within 1s",
          },
        ]);
      },
      ["--timeout-ms", "1000", "--on-timeout", "skip", "tool_failure"],
    );
  });
});

describe("terminal channel in process", () => {
  it("the caller's AbortSignal cancels a pending prompt with HumanCancelled('aborted')", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (d: Buffer) => (shown += d.toString()));
    const ch = new TerminalChannel({ input, output });
    const ctl = new AbortController();
    const pending = ch.ask(SAMPLE_QUESTIONS.approval, { signal: ctl.signal });
    await new Promise((r) => setTimeout(r, 50));
    ctl.abort();
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HumanCancelled);
    expect(err).toMatchObject({
      code: "HIL_CANCELLED",
      reason: "aborted",
      question: SAMPLE_QUESTIONS.approval,
    });
    expect(shown).toContain("filesystem.write_file");
    input.destroy();
    output.destroy();
  });
});
