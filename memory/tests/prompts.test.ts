import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LlmCallRecord } from "../../core/index.js";
import { SessionStore } from "../index.js";
import { PromptIds, promptParts, storePrompt } from "../prompts.js";
import { simulateSession } from "./simulate.js";

let dir: string;
beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), "pda-prompts-"))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const call = (prompt: string): LlmCallRecord => ({
  role: "decision",
  provider: "p",
  model: "m",
  ok: true,
  input_tokens: 1,
  output_tokens: 1,
  latency_ms: 1,
  attempts: 1,
  prompt,
  raw_response: "{}",
  started_at: new Date().toISOString(),
});

const INSTRUCTIONS = "You are the decision module.\nRules:\n- compute with tools\n\n".repeat(40);
const TOOLS = "Available tools:\n- add(a, b)\n- multiply(a, b)\n\n";

describe("prompt text stored once per distinct paragraph (migration 10)", () => {
  it("cuts a text into paragraphs that join back to it exactly", () => {
    for (const text of ["", "one line", "a\n\nb", "a\n\n\n\nb\n\n", "\n\nlead", "x\r\n\r\ny\n\n\nz"]) {
      expect(promptParts(text).join("")).toBe(text);
    }
    expect(promptParts("a\n\nb\nc\n\nd")).toEqual(["a\n\n", "b\nc\n\n", "d"]);
  });

  it("gives back every prompt as sent, while the paragraphs calls share are kept once", () => {
    const store = SessionStore.open(join(dir, "p.db"), { env: {} });
    try {
      const prompts: string[] = [];
      for (let i = 0; i < 20; i++) simulateSession(store, { id: `s${i}`, query: `q${i}`, steps: 1 });
      const count = () => store.db.prepare("SELECT count(*) FROM prompt_texts").pluck().get() as number;
      const before = count();
      for (let i = 0; i < 20; i++) {
        const p = `${INSTRUCTIONS}${TOOLS}Original request:\nWhat is ${i} + ${i}?\n\nStep ${i} failed.`;
        prompts.push(p);
        store.recordLlmCall(`s${i}`, call(p));
      }
      for (let i = 0; i < 20; i++) expect(store.llmCalls(`s${i}`).at(-1)!.prompt).toBe(prompts[i]);
      // The instruction paragraph and the tool list once, and the two paragraphs each call has of its own.
      expect(count() - before).toBe(2 + 2 * 20);
      const stored = store.db.prepare("SELECT sum(length(text)) FROM prompt_texts").pluck().get() as number;
      const sent = prompts.reduce((n, p) => n + p.length, 0);
      expect(stored).toBeLessThan(sent / 10);
      // The row keeps the size of the prompt as sent, not of what is stored for it.
      const bytes = store.db
        .prepare("SELECT prompt_bytes FROM llm_calls WHERE session_id = 's3' ORDER BY id DESC LIMIT 1")
        .pluck()
        .get();
      expect(bytes).toBe(Buffer.byteLength(prompts[3]!));
    } finally {
      store.close();
    }
  });

  it("keeps the parts' ids in memory: a repeated part is found without reading the table, and its id is the table's", () => {
    const store = SessionStore.open(join(dir, "c.db"), { env: {} });
    try {
      const known = new PromptIds();
      const db = store.db;
      const first = storePrompt(db, `${INSTRUCTIONS}${TOOLS}q1`, known);
      expect(known.size).toBe(3);
      // Taken from memory: the same ids even with the table's read of them made to fail.
      const again = db.transaction(() => {
        db.prepare("UPDATE prompt_texts SET sha256 = randomblob(32)").run();
        return storePrompt(db, `${INSTRUCTIONS}${TOOLS}q1`, known);
      })();
      expect(again).toBe(first);
      // Bounded: past its size it starts over.
      const small = new PromptIds(2);
      small.set("a", 1);
      small.set("b", 2);
      small.set("c", 3);
      expect([small.size, small.get("a"), small.get("c")]).toEqual([1, undefined, 3]);
    } finally {
      store.close();
    }
  });

  it("a write that rolls back forgets the ids it found or inserted: the next call stores its parts again", () => {
    for (const groupCommitMs of [0, 50]) {
      const store = SessionStore.open(join(dir, `rb-${groupCommitMs}.db`), { env: {}, groupCommitMs });
      try {
        simulateSession(store, { id: "s", query: "q", steps: 1 });
        const p = `${INSTRUCTIONS}A paragraph no call has sent before.\n\nend`;
        expect(() =>
          store.batch(() => {
            store.recordLlmCall("s", call(p));
            throw new Error("later write in the same transaction failed");
          }),
        ).toThrow(/later write/);
        store.recordLlmCall("s", call(p));
        expect(store.llmCalls("s").at(-1)!.prompt).toBe(p);
        const parts = store.db.prepare("SELECT text FROM prompt_texts").pluck().all() as string[];
        expect(parts).toContain("A paragraph no call has sent before.\n\n");
      } finally {
        store.close();
      }
    }
  });

  it("stores the redacted text, so a secret in a shared paragraph is in no part", () => {
    const secret = "sk-proj-Q7w8E9r0T1y2U3i4O5p6A7s8";
    const store = SessionStore.open(join(dir, "r.db"), { env: {} });
    try {
      simulateSession(store, { id: "r", query: "q", steps: 1 });
      store.recordLlmCall("r", call(`${INSTRUCTIONS}key: ${secret}\n\nend`));
      const parts = store.db.prepare("SELECT text FROM prompt_texts").pluck().all() as string[];
      expect(parts.some((t) => t.includes(secret))).toBe(false);
      expect(store.llmCalls("r").at(-1)!.prompt).toBe(`${INSTRUCTIONS}key: [REDACTED:openai_key]\n\nend`);
    } finally {
      store.close();
    }
  });
});

describe("a model call's value kept once when it is its raw response's JSON", () => {
  const withValue = (raw: string, value: unknown): LlmCallRecord => ({
    ...call("p"),
    raw_response: raw,
    value,
  });
  const stored = (store: SessionStore) =>
    store.db.prepare("SELECT value_json FROM llm_calls ORDER BY id DESC LIMIT 1").pluck().get();

  it("stores the value as the raw response when parsing it gives the value, and reads it back", () => {
    const store = SessionStore.open(join(dir, "v.db"), { env: {} });
    try {
      simulateSession(store, { id: "s", query: "q", steps: 1 });
      const value = { answer: 42, why: "six times seven", list: [1, "two"] };
      // The exact JSON, and the same JSON as a model spaces it out.
      for (const raw of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
        store.recordLlmCall("s", withValue(raw, value));
        expect(stored(store)).toBe("");
        expect(store.llmCalls("s").at(-1)).toMatchObject({ raw_response: raw, value });
      }
      // A value the raw text does not parse to (schema defaults filled in, prose around the JSON) is its own.
      for (const [raw, v] of [
        ['{"answer":42}', { answer: 42, why: "" }],
        ['Here it is: {"answer":42}', { answer: 42 }],
      ] as const) {
        store.recordLlmCall("s", withValue(raw, v));
        expect(stored(store)).toBe(JSON.stringify(v));
        expect(store.llmCalls("s").at(-1)).toMatchObject({ raw_response: raw, value: v });
      }
      // No value (a failed call): none stored, none read.
      store.recordLlmCall("s", withValue("not json", undefined));
      expect(stored(store)).toBeNull();
      expect(store.llmCalls("s").at(-1)!.value).toBeUndefined();
    } finally {
      store.close();
    }
  });
});
