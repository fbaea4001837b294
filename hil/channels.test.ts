import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, type Clock } from "../core/index.js";
import {
  HumanCancelled,
  POLICY_NAMES,
  PolicyChannel,
  ScriptError,
  ScriptedChannel,
  TerminalChannel,
  askOrDefer,
  createChannel,
  type HumanChannel,
  type Question,
} from "./index.js";
import { SAMPLE_QUESTIONS as Q } from "./samples.js";

const AT = "2026-05-06T07:08:09.000Z";
const clock: Clock = { now: () => 0, iso: () => AT, sleep: async () => {} };
const dir = mkdtempSync(join(tmpdir(), "pda-hil-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function scriptFile(yaml: string): string {
  const file = join(dir, `answers-${n++}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

describe("scripted channel", () => {
  it("answers each kind in order from a YAML file", async () => {
    const file = scriptFile(`
tool_failure:
  - {choice: give_result, value: 31}
  - retry
  - {choice: edit_code, code: "return 2"}
  - skip
  - abort
clarification:
  - "Paris, France"
  - {choice: no_answer}
  - {choice: defer, reason: ask the owner}
approval:
  - allow_always
  - {choice: deny}
elicitation:
  - {action: accept, content: {name: Ada, email: ada@example.org, seats: 2}}
  - decline
`);
    const ch = createChannel(`scripted:${file}`, { isTTY: false, clock });
    expect(ch).toBeInstanceOf(ScriptedChannel);
    const by = { answered_by: "scripted", at: AT };

    expect(await ch.ask(Q.tool_failure)).toEqual({
      kind: "tool_failure",
      choice: "give_result",
      value: 31,
      ...by,
    });
    expect(await ch.ask(Q.tool_failure)).toEqual({ kind: "tool_failure", choice: "retry", ...by });
    expect(await ch.ask(Q.tool_failure)).toEqual({
      kind: "tool_failure",
      choice: "edit_code",
      code: "return 2",
      ...by,
    });
    // Kinds keep separate queues: a clarification in between does not shift tool_failure answers.
    expect(await ch.ask(Q.clarification)).toEqual({
      kind: "clarification",
      choice: "answer",
      text: "Paris, France",
      ...by,
    });
    expect(await ch.ask(Q.tool_failure)).toMatchObject({ choice: "skip" });
    expect(await ch.ask(Q.tool_failure)).toEqual({
      kind: "stop",
      question_kind: "tool_failure",
      outcome: "abort",
      reason: "scripted abort",
      ...by,
    });
    expect(await ch.ask(Q.clarification)).toMatchObject({ choice: "no_answer" });
    expect(await ch.ask(Q.clarification)).toMatchObject({
      kind: "stop",
      outcome: "defer",
      reason: "ask the owner",
    });
    expect(await ch.ask(Q.approval)).toMatchObject({ kind: "approval", choice: "allow_always" });
    expect(await ch.ask(Q.approval)).toMatchObject({ kind: "approval", choice: "deny" });
    expect(await ch.ask(Q.elicitation)).toEqual({
      kind: "elicitation",
      action: "accept",
      // newsletter was not answered: the schema's default fills it, as a form would.
      content: { name: "Ada", email: "ada@example.org", seats: 2, newsletter: false },
      ...by,
    });
    expect(await ch.ask(Q.elicitation)).toMatchObject({ action: "decline" });
    expect((ch as ScriptedChannel).unconsumed()).toEqual([]);
    (ch as ScriptedChannel).assertConsumed();
  });

  it("fails loudly when a question has no scripted answer left", async () => {
    const file = scriptFile("approval: [allow_once]\n");
    const ch = ScriptedChannel.fromFile(file);
    await ch.ask(Q.approval);
    const err = await ch.ask(Q.approval).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptError);
    expect(err).toMatchObject({ code: "HIL_SCRIPT_EXHAUSTED", question: Q.approval });
    expect((err as Error).message).toContain(`${file}: no scripted approval answer left (1 given)`);
    await expect(ch.ask(Q.clarification)).rejects.toMatchObject({ code: "HIL_SCRIPT_EXHAUSTED" });
  });

  it("ui:<file> (the page's one answer) pauses on a question past it, so the page can ask that one", async () => {
    const file = scriptFile("approval: [allow_once]\n");
    const ch = createChannel(`ui:${file}`, { isTTY: false });
    expect(await ch.ask(Q.approval)).toMatchObject({ choice: "allow_once", answered_by: "ui" });
    expect(await ch.ask(Q.in_doubt)).toMatchObject({
      kind: "stop",
      question_kind: "in_doubt",
      outcome: "defer",
      reason: "waits for an answer in pda ui",
      answered_by: "ui",
    });
    // An elicitation cannot wait past its tool call: it is cancelled, as Ctrl-C cancels one.
    expect(await ch.ask(Q.elicitation)).toMatchObject({ action: "cancel", answered_by: "ui" });
  });

  it("reports the answers nobody asked for", async () => {
    const ch = new ScriptedChannel(
      {
        clarification: [
          { choice: "answer", text: "a" },
          { choice: "answer", text: "b" },
        ],
        approval: [{ choice: "deny" }],
      },
      { source: "t.yaml" },
    );
    await ch.ask(Q.clarification);
    expect(ch.unconsumed()).toEqual([
      { kind: "clarification", index: 1, entry: { choice: "answer", text: "b" } },
      { kind: "approval", index: 0, entry: { choice: "deny" } },
    ]);
    expect(() => ch.assertConsumed()).toThrow(
      "t.yaml: 2 scripted answer(s) never asked for: clarification[1], approval[0]",
    );
  });

  it("checks an entry's `expect` text against the question", async () => {
    const ch = new ScriptedChannel({
      approval: [
        { choice: "deny", expect: "write_file" },
        { choice: "deny", expect: "rm" },
      ],
    });
    expect(await ch.ask(Q.approval)).toMatchObject({ choice: "deny" });
    await expect(ch.ask(Q.approval)).rejects.toMatchObject({ code: "HIL_SCRIPT_MISMATCH" });
  });

  it("checks scripted elicitation content against the requested schema", async () => {
    const ch = new ScriptedChannel(
      { elicitation: [{ action: "accept", content: { name: "Ada", email: "not-mail", seats: 2 } }] },
      { source: "e.yaml" },
    );
    const err = await ch.ask(Q.elicitation).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "HIL_SCRIPT_INVALID" });
    expect((err as Error).message).toMatch(
      /^e\.yaml: elicitation\[0\]: content does not fit the requested schema: email:/,
    );
  });

  it("a malformed script is a ConfigError naming file, line and field", () => {
    const bad = scriptFile("approval:\n  - allow_once\n  - maybe\n");
    const err = (() => {
      try {
        createChannel(`scripted:${bad}`, { isTTY: false });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(new RegExp(`^${bad}:3: approval\\.1\\.choice:`));
    expect(() => createChannel(`scripted:${scriptFile("give_result: 3\n")}`, { isTTY: false })).toThrow(
      /Unrecognized key.*give_result/,
    );
    expect(() =>
      createChannel(`scripted:${scriptFile("tool_failure: [{choice: give_result}]\n")}`, { isTTY: false }),
    ).toThrow(/tool_failure\.0\.value: give_result needs a value/);
    expect(() => createChannel(`scripted:${join(dir, "missing.yaml")}`, { isTTY: false })).toThrow(
      /cannot read the file/,
    );
  });
});

describe("policies", () => {
  const ask = (name: string, q: Question) => createChannel(`policy:${name}`, { isTTY: true, clock }).ask(q);

  it("every policy answers every kind at once, attributed to the policy", async () => {
    for (const name of POLICY_NAMES) {
      for (const q of Object.values(Q)) {
        const a = await ask(name, q);
        expect(a.answered_by).toBe(`policy:${name}`);
        expect(a.at).toBe(AT);
      }
    }
  });

  it("skip carries on without a person: skip the step, no answer, deny the tool, decline the form", async () => {
    expect(await ask("skip", Q.tool_failure)).toMatchObject({ kind: "tool_failure", choice: "skip" });
    expect(await ask("skip", Q.clarification)).toMatchObject({ kind: "clarification", choice: "no_answer" });
    expect(await ask("skip", Q.approval)).toMatchObject({ kind: "approval", choice: "deny" });
    expect(await ask("skip", Q.elicitation)).toMatchObject({ kind: "elicitation", action: "decline" });
  });

  it("fail, abort and defer stop the session; an elicitation is cancelled instead", async () => {
    for (const [name, outcome] of [
      ["fail", "fail"],
      ["abort", "abort"],
      ["defer", "defer"],
    ] as const) {
      for (const q of [Q.tool_failure, Q.clarification, Q.approval]) {
        expect(await ask(name, q)).toMatchObject({ kind: "stop", question_kind: q.kind, outcome });
      }
      expect(await ask(name, Q.elicitation)).toMatchObject({ kind: "elicitation", action: "cancel" });
    }
    expect(await ask("defer", Q.clarification)).toMatchObject({
      reason: "paused until a person answers (policy:defer)",
    });
  });

  it("deny refuses what needs granting and fails what needs an answer", async () => {
    expect(await ask("deny", Q.approval)).toMatchObject({ kind: "approval", choice: "deny" });
    expect(await ask("deny", Q.elicitation)).toMatchObject({ action: "decline" });
    expect(await ask("deny", Q.tool_failure)).toMatchObject({ kind: "stop", outcome: "fail" });
    expect(await ask("deny", Q.clarification)).toMatchObject({ kind: "stop", outcome: "fail" });
  });

  it("an aborted signal cancels even a policy", async () => {
    const ch = new PolicyChannel("skip");
    await expect(ch.ask(Q.approval, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(HumanCancelled);
  });
});

describe("createChannel", () => {
  it("picks terminal on a TTY and policy:fail without one", () => {
    expect(createChannel(undefined, { isTTY: true })).toBeInstanceOf(TerminalChannel);
    const noTty = createChannel(undefined, { isTTY: false });
    expect(noTty.name).toBe("policy:fail");
    expect(createChannel("  ", { isTTY: false }).name).toBe("policy:fail");
  });

  it("rejects bad specs with a ConfigError (exit 2) that says what is wrong", () => {
    const cases: Array<[string, boolean, RegExp]> = [
      [
        "terminal",
        false,
        /--hil terminal needs a terminal, but stdin\/stdout is not a TTY and no other terminal was found; use --hil policy:/,
      ],
      ["terminal:x", true, /"terminal" takes no argument/],
      ["policy:maybe", true, /unknown policy "maybe" \(known: fail, skip, abort, deny, defer, defaults\)/],
      ["policy", true, /unknown policy ""/],
      ["scripted", true, /needs a file/],
      ["human", true, /--hil human: expected terminal, scripted:<file> or policy:</],
    ];
    for (const [spec, isTTY, message] of cases) {
      let err: unknown;
      try {
        createChannel(spec, { isTTY });
      } catch (e) {
        err = e;
      }
      expect(err, spec).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).exitCode).toBe(2);
      expect((err as Error).message).toMatch(message);
    }
  });
});

describe("askOrDefer", () => {
  const cancelling: HumanChannel = {
    name: "terminal",
    ask: async (q) => {
      throw new HumanCancelled("interrupt", q);
    },
  };

  it("turns a cancelled prompt into a defer stop, keeping the reason", async () => {
    const a = await askOrDefer(cancelling, Q.tool_failure, { clock });
    expect(a).toEqual({
      kind: "stop",
      question_kind: "tool_failure",
      outcome: "defer",
      reason: "the tool_failure question was interrupted (Ctrl-C)",
      answered_by: "terminal",
      at: AT,
      note: "the tool_failure question was interrupted (Ctrl-C)",
    });
    expect(await askOrDefer(cancelling, Q.elicitation, { clock })).toMatchObject({ action: "cancel" });
  });

  it("lets other errors through", async () => {
    const ch = new ScriptedChannel({});
    await expect(askOrDefer(ch, Q.approval)).rejects.toBeInstanceOf(ScriptError);
  });
});
