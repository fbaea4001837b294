import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LlmCallRecord } from "../../core/index.js";
import { SessionStore } from "../index.js";
import { promptParts } from "../prompts.js";
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
