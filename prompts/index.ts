/**
 * Prompt templates are Markdown files in this folder with `{{name}}` placeholders. Rendering fails loudly on a
 * placeholder with no value, and on a value that no placeholder uses (a sign the template and code drifted).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, PROMPTS_DIR } from "../core/index.js";

const cache = new Map<string, string>();

function load(name: string, dir: string): string {
  const file = join(dir, `${name}.md`);
  let text = cache.get(file);
  if (text === undefined) {
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new ConfigError(`prompt template ${file} cannot be read: ${(e as Error).message}`, { cause: e });
    }
    cache.set(file, text);
  }
  return text;
}

/** Render `prompts/<name>.md` (e.g. "decision/initial") with the given values. */
export function renderPrompt(
  name: string,
  values: Record<string, string>,
  dir: string = PROMPTS_DIR,
): string {
  const template = load(name, dir);
  const used = new Set<string>();
  const out = template.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const v = values[key];
    if (v === undefined) throw new ConfigError(`prompt ${name}: no value for {{${key}}}`);
    used.add(key);
    return v;
  });
  const unused = Object.keys(values).filter((k) => !used.has(k));
  if (unused.length > 0)
    throw new ConfigError(`prompt ${name}: values not used by the template: ${unused.join(", ")}`);
  // Empty optional sections leave runs of blank lines; fold them.
  return out.replace(/\n{3,}/g, "\n\n").trim() + "\n";
}

/** A model call's text: the system text and the prompt. */
export interface PromptText {
  system: string;
  prompt: string;
}

/** `p` with `section` (an agent's own text: its role, the agents it may call) added to the system text. */
export function withSection(p: PromptText, section: string): PromptText {
  return section ? { system: `${p.system.trimEnd()}\n\n${section.trim()}\n`, prompt: p.prompt } : p;
}
