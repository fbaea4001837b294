/** What to say when no model can be used: first the one command that works without any, then the ways to get one. */
import { isAbsolute, join, relative } from "node:path";
import { PACKAGE_ROOT } from "../core/index.js";

/** The bundled demo script, as a path the user can type from where they are. */
export function demoScriptPath(cwd = process.cwd()): string {
  const file = join(PACKAGE_ROOT, "config", "demo", "calculator.yaml");
  const rel = relative(cwd, file);
  return rel.startsWith("..") || isAbsolute(rel) ? file : rel;
}

/** A few short lines; `why` says what was tried, last, for those who want the detail. */
export function noModelMessage(why: string): string {
  return [
    "no model available. This runs without one (the bundled demo, a scripted model and the real math server):",
    `  pda run "What is 32 + 5 - 3 * 2" --model scripted:${demoScriptPath()}`,
    "For a real model: set GEMINI_API_KEY, or OPENAI_BASE_URL (e.g. Ollama at http://127.0.0.1:11434/v1),",
    "or pass --model llama:<file.gguf> (or --model anthropic with ANTHROPIC_API_KEY). `pda models` shows what is configured.",
    `(${why})`,
  ].join("\n");
}
