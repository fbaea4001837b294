/**
 * Prompt text stored once per distinct part (migration 10). A model call's prompt is mostly text every call
 * repeats (the instructions, the rules, the tool list) around a little that changes (the request, the steps so
 * far), so it is cut into paragraphs and each distinct paragraph is kept once in `prompt_texts`, keyed by its
 * sha256; the call's row holds the list of part ids (`prompt_parts`, a JSON array) and an empty `prompt`.
 * Joining the parts gives back the exact text. Rows written before migration 10 keep their text in `prompt`.
 */
import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import { stmt } from "./sql.js";

/** Paragraphs, each with the blank line that ends it, so that joining them gives back `text` exactly. */
export function promptParts(text: string): string[] {
  const parts = text.split(/(?<=\n\n)/);
  return parts.length === 1 && parts[0] === "" ? [] : parts;
}

/**
 * The ids of parts this store has written or found, by text, so a part every call repeats costs a map lookup
 * instead of a sha256 and a SELECT. Ids never change once committed (prompt_texts rows are never deleted);
 * the store clears it whenever a write or a group's COMMIT fails, as an id found or inserted in a transaction
 * that rolled back may be gone. Bounded: past `max` entries it starts over, so a long run's parts that never
 * repeat (each query's own text) do not pile up.
 */
export class PromptIds {
  private readonly ids = new Map<string, number>();
  constructor(private readonly max = 2_000) {}

  get(part: string): number | undefined {
    return this.ids.get(part);
  }

  set(part: string, id: number): void {
    if (this.ids.size >= this.max) this.ids.clear();
    this.ids.set(part, id);
  }

  clear(): void {
    this.ids.clear();
  }

  get size(): number {
    return this.ids.size;
  }
}

/** Store each part not stored yet; returns the ids in order, as the JSON kept in llm_calls.prompt_parts. */
export function storePrompt(db: Database.Database, text: string, known?: PromptIds): string {
  const ids = promptParts(text).map((part) => {
    const cached = known?.get(part);
    if (cached !== undefined) return cached;
    const sha = createHash("sha256").update(part).digest();
    // Most parts are stored already: one read finds them; only a new part is inserted (in the caller's
    // write transaction, so no other writer can insert it in between).
    const had = stmt<{ id: number }>(db, "SELECT id FROM prompt_texts WHERE sha256 = ?").get(sha) as
      { id: number } | undefined;
    const id =
      had?.id ??
      (
        stmt<{ id: number }>(db, "INSERT INTO prompt_texts (sha256, text) VALUES (?, ?) RETURNING id").get(
          sha,
          part,
        ) as { id: number }
      ).id;
    known?.set(part, id);
    return id;
  });
  return JSON.stringify(ids);
}

/** The prompt of a logged call: its parts joined, or the text kept inline by rows older than migration 10. */
export function promptOf(
  db: Database.Database,
  row: { prompt: string; prompt_parts: string | null },
): string {
  if (row.prompt_parts === null) return row.prompt;
  const ids = JSON.parse(row.prompt_parts) as number[];
  const text = stmt<{ text: string }>(db, "SELECT text FROM prompt_texts WHERE id = ?");
  return ids.map((id) => (text.get(id) as { text: string } | undefined)?.text ?? "").join("");
}
