/**
 * Loads and validates YAML/JSON config files. Every error names the file, the line and the field.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { LineCounter, parseDocument, isMap, isSeq, type Node } from "yaml";
import type { z } from "zod";
import { ConfigError, DEFAULT_CONFIG_DIR } from "../core/index.js";
import { Profile, ProfilesFile } from "./schema.js";

/** `--config` may be a folder of config files or one file inside it; either way, the folder. */
export function configDir(option?: string): string {
  const given = option ?? process.env.PDA_CONFIG;
  if (!given) return DEFAULT_CONFIG_DIR;
  const abs = isAbsolute(given) ? given : resolve(given);
  try {
    return statSync(abs).isDirectory() ? abs : resolve(abs, "..");
  } catch {
    throw new ConfigError(`--config: ${given} does not exist`);
  }
}

/** Line number (1-based) of the node at `path` in a parsed YAML document, when it can be found. */
function lineOf(
  doc: ReturnType<typeof parseDocument>,
  lc: LineCounter,
  path: PropertyKey[],
): number | undefined {
  let node: unknown = doc.contents;
  let last: Node | undefined = doc.contents ?? undefined;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown })?.value === key);
      if (!pair) break;
      last = (pair.key as Node) ?? last;
      node = pair.value;
      if (node) last = node as Node;
    } else if (isSeq(node) && typeof key === "number") {
      node = node.items[key];
      if (node) last = node as Node;
    } else break;
  }
  const offset = last?.range?.[0];
  return offset === undefined ? undefined : lc.linePos(offset).line;
}

/** Parse a YAML (or JSON) text and validate it; errors carry file:line and the field path. */
export function parseConfigText<S extends z.ZodType>(file: string, text: string, schema: S): z.infer<S> {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = e.linePos?.[0]?.line;
    throw new ConfigError(`${file}${line ? `:${line}` : ""}: ${e.message.split("\n")[0]}`);
  }
  const result = schema.safeParse(doc.toJS());
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const line = lineOf(doc, lc, issue.path);
    const field = issue.path.length ? issue.path.join(".") : "(top level)";
    throw new ConfigError(`${file}${line ? `:${line}` : ""}: ${field}: ${issue.message}`);
  }
  return result.data;
}

export function loadConfigFile<S extends z.ZodType>(file: string, schema: S): z.infer<S> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  return parseConfigText(file, text, schema);
}

/** `name` in the config folder, or the bundled one when the folder has none (a folder may hold only some files). */
export function configFile(dir: string, name: string): string {
  const own = join(dir, name);
  return existsSync(own) ? own : join(DEFAULT_CONFIG_DIR, name);
}

/** The named profile from profiles.yaml in the config folder (`--profile`, else the file's default). */
export function loadProfile(dir: string, name?: string): { name: string; profile: Profile } {
  const file = configFile(dir, "profiles.yaml");
  const parsed = loadConfigFile(file, ProfilesFile);
  const chosen = name ?? parsed.default;
  const profile = parsed.profiles[chosen];
  if (!profile) {
    const known = Object.keys(parsed.profiles).join(", ");
    throw new ConfigError(`${file}: no profile named "${chosen}" (known: ${known})`);
  }
  return { name: chosen, profile: Profile.parse(profile) };
}
