/**
 * The step journal between a real SQLite store and the real sandbox: what it hands the sandbox to replay by
 * itself. A logged call's arguments are matched on their text in the sandbox only when the store kept that
 * text whole; a call whose arguments the store redacted goes to the host, which checks it by hash. A result
 * the store redacted is never handed to the code: its call is one whose result was not kept.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Profile } from "../../config/index.js";
import { runCode } from "../../action/index.js";
import { InProcessToolHost } from "../../action/testing.js";
import { newSession, systemClock, type AgentSession } from "../../core/index.js";
import { ScriptedChannel, type ScriptFile } from "../../hil/index.js";
import { SessionStore } from "../../memory/index.js";
import { StepJournal } from "../kernel/journal.js";
import { scopedHost } from "../kernel/index.js";

const SECRET = "hunter2-long-secret";
const limits = Profile.parse({}).sandbox;
let dir: string;
let store: SessionStore;
let session: AgentSession;
let host: InProcessToolHost;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-journal-"));
  store = SessionStore.open(join(dir, "pda.db"), { secrets: [SECRET] });
  session = newSession("note twice", "s-journal", systemClock.iso());
  store.startSession(session);
  host = new InProcessToolHost([
    {
      server: "pad",
      name: "note",
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      handler: (args) => ({ length: String(args.text).length }),
    },
    // A secret as a tool's result, read-only (safe to repeat) or not, and a tool the code passes it to.
    { server: "vault", name: "read", safeToRepeat: true, handler: () => ({ token: SECRET }) },
    { server: "vault", name: "rotate", handler: () => ({ token: SECRET }) },
    {
      server: "api",
      name: "post",
      inputSchema: { type: "object", properties: { token: { type: "string" } }, required: ["token"] },
      handler: (args) => ({ accepted: args.token === SECRET }),
    },
  ]);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Step 0 run through a fresh journal, as a (resumed) session runs it; the journal's view of its log first.
 * `answers`: the person's, from a scripted channel that fails a question it has no answer left for.
 */
async function runStep(code: string, answers?: ScriptFile) {
  const human = answers && {
    channel: new ScriptedChannel(answers),
    recorder: store,
    clock: systemClock,
  };
  const journal = new StepJournal(store, session, human, systemClock.now, systemClock.iso);
  const scoped = scopedHost(journal.host(host), systemClock.now, systemClock.iso);
  const off = scoped.onCall((r) => store.recordToolCall(session.session_id, 0, r));
  journal.begin(0, () => {});
  const replay = scoped.replay?.();
  try {
    const result = await runCode(code, scoped, limits);
    return { replay, result, failure: journal.end().failure };
  } finally {
    off();
  }
}

const calls = () => host.received.map((r) => r.name);

describe("what the journal hands the sandbox to replay", () => {
  it("a logged call's arguments only when the store kept them whole; a redacted call is checked by the host", async () => {
    const code = `const a = await note({ text: "plain" }); const b = await note({ text: "${SECRET}" });
      return a.length + b.length;`;
    const first = await runStep(code);
    expect(first.replay).toMatchObject({ outcomes: [], clock: "" });
    expect(first.result.value).toBe(5 + SECRET.length);

    const again = await runStep(code);
    expect(again.replay?.outcomes.map((o) => o?.logged?.argsJson)).toEqual(['{"text":"plain"}', undefined]);
    expect(again.result.value).toBe(5 + SECRET.length);
    // Neither call was made again: the first matched in the sandbox, the second by hash in the host.
    expect(host.received.map((r) => r.args.text)).toEqual(["plain", SECRET]);
    const rows = store.db
      .prepare("SELECT seq, state FROM tool_calls_all WHERE session_id = ? ORDER BY ord")
      .all(session.session_id);
    expect(rows).toEqual([
      { seq: 0, state: "done" },
      { seq: 1, state: "done" },
      { seq: 0, state: "replayed" },
      { seq: 1, state: "replayed" },
    ]);
    // The first replayed call is a run pointing at its logged row; the second, checked whole, a row of its own.
    const runs = store.db.prepare("SELECT first_seq, count FROM replayed_runs").all();
    expect(runs).toEqual([{ first_seq: 0, count: 1 }]);
  });
});

describe("a result the store redacted", () => {
  const code = (tool: string) =>
    `const t = (await ${tool}({})).token; const r = await post({ token: t }); return [t === "${SECRET}", r.accepted];`;

  it("is not handed to the code again: a read-only tool is asked again, and the later call still replays", async () => {
    const first = await runStep(code("read"));
    expect(first.result.value).toEqual([true, true]);
    const logged = store.stepCalls(session.session_id, 0);
    expect(logged.map((c) => [c.seq, c.result_whole])).toEqual([
      [0, false],
      [1, true],
    ]);
    expect(logged[0]!.result_json).toContain("[REDACTED:");

    const again = await runStep(code("read"));
    // Nothing past the redacted result is handed to the sandbox: it cannot know the token.
    expect(again.replay?.outcomes).toEqual([]);
    expect(again.failure).toBeUndefined();
    expect(again.result.value).toEqual([true, true]);
    // The read was made again for the real token; the post, matched by hash, was not.
    expect(calls()).toEqual(["vault.read", "api.post", "vault.read"]);
  });

  it("of a tool not safe to repeat fails the step unattended, and nothing later is sent", async () => {
    await runStep(code("rotate"));
    const again = await runStep(code("rotate"));
    expect(again.failure?.code).toBe("IN_DOUBT");
    expect(again.failure?.message).toMatch(
      /vault\.rotate was made before the restart, but its result was not kept/,
    );
    expect(again.result.ok).toBe(false);
    expect(calls()).toEqual(["vault.rotate", "api.post"]);
  });
});

describe("a person's decision on a call whose result was not kept", () => {
  const code = `let t;
    try { t = (await rotate({})).token; } catch (e) { t = e.code; }
    await note({ text: "rotated" });
    return t;`;
  const replayedRows = () =>
    store.db
      .prepare(
        "SELECT seq, result_json FROM tool_calls_all WHERE session_id = ? AND state = 'replayed' ORDER BY ord",
      )
      .all(session.session_id);

  it("is logged as the call's outcome: a later run of the step replays the given result and asks nothing", async () => {
    await runStep(code);
    const decided = await runStep(code, { in_doubt: [{ choice: "give_result", value: { token: "t-2" } }] });
    expect(decided.result.value).toBe("t-2");
    // A third run (another pause in the step) has no answer to give: the log must hold the decision.
    const again = await runStep(code, {});
    expect(again.failure).toBeUndefined();
    expect(again.result.value).toBe("t-2");
    expect(again.replay?.outcomes.map((o) => o && "text" in o && o.text)).toEqual([
      '{"token":"t-2"}',
      '{"length":7}',
    ]);
    expect(calls()).toEqual(["vault.rotate", "pad.note"]);
    const logged = store.stepCalls(session.session_id, 0)[0]!;
    expect(logged).toMatchObject({ result_json: '{"token":"t-2"}', later: true });
    // The third run's copy of the decided row shows the decided result, not the first row's redacted one.
    expect(replayedRows()).toEqual([
      { seq: 1, result_json: '{"length":7}' },
      { seq: 0, result_json: '{"token":"t-2"}' },
      { seq: 1, result_json: '{"length":7}' },
    ]);
  });

  it("to skip it holds too: the code gets IN_DOUBT again, and nothing is asked or sent", async () => {
    await runStep(code);
    expect((await runStep(code, { in_doubt: [{ choice: "skip" }] })).result.value).toBe("IN_DOUBT");
    const again = await runStep(code, {});
    expect(again.failure).toBeUndefined();
    expect(again.result.value).toBe("IN_DOUBT");
    expect(calls()).toEqual(["vault.rotate", "pad.note"]);
  });
});

describe("the step's clock", () => {
  it("is read again from the log on replay, so a time in a call's arguments makes the logged call", async () => {
    const slow = new InProcessToolHost([
      { server: "w", name: "wait", handler: () => new Promise((r) => setTimeout(() => r(1), 30)) },
      {
        server: "w",
        name: "stamp",
        inputSchema: { type: "object", properties: { at: { type: "number" } }, required: ["at"] },
        handler: (args) => ({ at: args.at }),
      },
    ]);
    host = slow;
    const code = `const t0 = Date.now(); await wait({}); const s = await stamp({ at: Date.now() });
      return [s.at - t0 >= 30, new Date().getTime() >= s.at];`;
    const first = await runStep(code);
    expect(first.result.value).toEqual([true, true]);
    const logged = store.stepCalls(session.session_id, 0);
    // Each call carries the readings taken before it: t0 before the wait, the stamp's own time before it.
    const stamped = (JSON.parse(logged[1]!.args_json!) as { at: number }).at;
    expect(logged.map((c) => c.clock_json)).toEqual([expect.stringMatching(/^\[\d+\]$/), `[${stamped}]`]);

    const again = await runStep(code);
    expect(again.failure).toBeUndefined();
    expect(again.replay?.clock).toMatch(new RegExp(`^\\d+,${stamped}$`));
    expect(again.result.value).toEqual([true, true]);
    // Neither call was made again: the stamp asked for the logged time, 30 ms after the logged start.
    expect(slow.received.map((r) => r.name)).toEqual(["w.wait", "w.stamp"]);
  });
});

describe("a damaged log", () => {
  it("fails the step with what is wrong, not as the code's error", async () => {
    const code = `const a = await note({ text: "x" }); return a.length;`;
    await runStep(code);
    store.flush();
    store.db
      .prepare("UPDATE tool_calls SET result_json = ? WHERE session_id = ? AND seq = 0")
      .run('{"length":', session.session_id);
    const again = await runStep(code);
    expect(again.result.ok).toBe(false);
    expect(again.result.error?.code).toBe("SANDBOX_RUNTIME");
    expect(again.result.error?.message).toMatch(/logged results cannot be read .*damaged/);
    expect(calls()).toEqual(["pad.note"]);
  });
});
