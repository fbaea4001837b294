/**
 * Was an answer correct? Against the Expected column: the same text, the same number within a tolerance,
 * or (for a text answer) the expected phrase inside the output. Or, with `--judge`, a model's verdict in a
 * small schema through the same provider interface as the loop.
 */
import { z } from "zod";
import { PROMPTS_DIR, escapeRegExp, type GenerateResult, type ModelProvider } from "../core/index.js";
import { renderPrompt } from "../prompts/index.js";
import type { CorrectBy } from "./schemas.js";

export interface MatchOptions {
  /** Relative tolerance for numbers (default 1e-6). */
  tolerance?: number;
}

export interface Verdict {
  correct: boolean;
  by: CorrectBy;
  reason?: string;
}

const NUMBER = /[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+(?:[eE][-+]?\d+)?/g;

function normalize(s: string): string {
  return s
    .trim()
    .replace(/^["'`]+|["'`]+$/g, "")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/[.!]+$/, "")
    .trim();
}

function numbersIn(s: string): number[] {
  return (s.match(NUMBER) ?? []).map((t) => Number(t.replace(/,/g, ""))).filter(Number.isFinite);
}

/** The expected value as numbers: one number, or a JSON list of numbers; else null. */
function expectedNumbers(expected: string): { values: number[]; decimals: number[] } | null {
  const t = expected.trim();
  const one = /^[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?$/.test(t) ? [t] : null;
  let parts = one;
  if (!parts && /^\[.*\]$/s.test(t)) {
    try {
      const list = JSON.parse(t) as unknown;
      if (Array.isArray(list) && list.length > 0 && list.every((x) => typeof x === "number"))
        parts = list.map((x: number) => String(x));
    } catch {
      parts = null;
    }
  }
  if (!parts) return null;
  return {
    values: parts.map(Number),
    decimals: parts.map((p) => /\.(\d+)/.exec(p.replace(/[eE].*$/, ""))?.[1]?.length ?? 0),
  };
}

/**
 * An expected number matches when it is within `tolerance` (relative), or, when Expected is written with
 * decimals, within half a unit of its last digit ("3.14" accepts 3.14159).
 */
function close(actual: number, expected: number, decimals: number, tolerance: number): boolean {
  const allowed = Math.max(tolerance * Math.abs(expected), 1e-9, decimals > 0 ? 0.5 * 10 ** -decimals : 0);
  return Math.abs(actual - expected) <= allowed + 1e-12;
}

/** Compare an answer with the expected one; the answer's last numbers count for a numeric Expected. */
export function matchExpected(output: string, expected: string, options: MatchOptions = {}): Verdict {
  const tolerance = options.tolerance ?? 1e-6;
  if (normalize(output) === normalize(expected)) return { correct: true, by: "exact" };
  const exp = expectedNumbers(expected);
  if (exp) {
    const got = numbersIn(output).slice(-exp.values.length);
    const ok =
      got.length === exp.values.length &&
      got.every((v, i) => close(v, exp.values[i]!, exp.decimals[i]!, tolerance));
    return { correct: ok, by: "numeric" };
  }
  const phrase = escapeRegExp(normalize(expected));
  const found = phrase !== "" && new RegExp(`(^|\\W)${phrase}(\\W|$)`).test(normalize(output));
  return { correct: found, by: "phrase" };
}

export const JudgeVerdict = z.object({
  correct: z.boolean(),
  reason: z.string(),
});
export type JudgeVerdict = z.infer<typeof JudgeVerdict>;

/** Ask the model whether `output` answers `query` as `expected` does. Throws ModelError like any call. */
export async function judgeAnswer(
  model: ModelProvider,
  input: { query: string; expected: string; output: string },
  signal?: AbortSignal,
): Promise<{ verdict: JudgeVerdict; result: GenerateResult<JudgeVerdict>; prompt: string }> {
  const system = renderPrompt("judge/system", {}, PROMPTS_DIR);
  const prompt = renderPrompt("judge/verdict", input, PROMPTS_DIR);
  const result = await model.generate({
    role: "judge",
    system,
    prompt,
    schema: JudgeVerdict,
    schemaName: "JudgeVerdict",
    signal,
  });
  return { verdict: result.value, result, prompt: `${system}\n${prompt}` };
}
