/**
 * Loads and validates YAML/JSON config files. Every error names the file, the line and the field.
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";
import envPaths from "env-paths";
import type { LineCounter, Node, parseDocument } from "yaml";
import type { z } from "zod";
import { ConfigError, DEFAULT_CONFIG_DIR, distPath } from "../core/index.js";
import { Profile, ProfilesFile } from "./schema.js";

/** Where the config folder was found, first match wins. */
export type ConfigSource = "flag" | "env" | "project" | "user" | "bundled";

/** The user's config folder (XDG on Linux: ~/.config/pda); used when it exists. */
export function userConfigDir(): string {
  return envPaths("pda", { suffix: "" }).config;
}

/** The nearest `.pda/` folder in `from` or one of its parents: a project's own config. */
function projectConfigDir(from: string): string | undefined {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const candidate = join(dir, ".pda");
    if (statSync(candidate, { throwIfNoEntry: false })?.isDirectory()) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The config folder and where it came from: `--config` (a folder or a file in it), else PDA_CONFIG, else the
 * nearest `.pda/` from the working folder up, else the user's config folder, else the bundled config/. A
 * folder may hold only some files: configFile() takes the others from the bundled folder.
 */
export function configSource(option?: string, cwd = process.cwd()): { dir: string; source: ConfigSource } {
  const given = option ?? process.env.PDA_CONFIG;
  if (given) {
    const abs = isAbsolute(given) ? given : resolve(given);
    const what = option ? "--config" : "PDA_CONFIG";
    const stat = statSync(abs, { throwIfNoEntry: false });
    if (!stat) throw new ConfigError(`${what}: ${given} does not exist`);
    return { dir: stat.isDirectory() ? abs : resolve(abs, ".."), source: option ? "flag" : "env" };
  }
  const project = projectConfigDir(cwd);
  if (project) return { dir: project, source: "project" };
  const user = userConfigDir();
  if (statSync(user, { throwIfNoEntry: false })?.isDirectory()) return { dir: user, source: "user" };
  return { dir: DEFAULT_CONFIG_DIR, source: "bundled" };
}

/** `--config` may be a folder of config files or one file inside it; either way, the folder (configSource). */
export function configDir(option?: string): string {
  return configSource(option).dir;
}

/** The yaml library packed into one file by the build (cli/bundle.ts), relative to dist/. */
export const YAML_BUNDLE = "core/yaml.cjs";
const require = createRequire(import.meta.url);
let yamlLib: typeof import("yaml") | undefined;
/**
 * The yaml library, loaded on the first text the cache (parseYaml) does not hold: a run whose config files are
 * unchanged reads them all from the cache and never loads it. The build's one-file copy, else the package.
 */
function yaml(): typeof import("yaml") {
  if (!yamlLib) {
    const bundled = distPath(YAML_BUNDLE);
    yamlLib = (existsSync(bundled) ? require(bundled) : require("yaml")) as typeof import("yaml");
  }
  return yamlLib;
}

/** Line number (1-based) of the node at `path` in a parsed YAML document, when it can be found. */
function lineOf(
  doc: ReturnType<typeof parseDocument>,
  lc: LineCounter,
  path: PropertyKey[],
): number | undefined {
  const { isMap, isSeq } = yaml();
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

/**
 * What a YAML file may cost to read. Config files are a few KB; the limits stop a file (or a "billion laughs"
 * alias bomb, a few hundred bytes that expand to gigabytes) from taking the process down with a stack trace.
 */
export const YAML_LIMITS = {
  /** Largest file read, in characters. */
  maxChars: 4 << 20,
  /** Most alias expansions (`*name`) in one document, counted as the yaml library counts them. */
  maxAliasCount: 1000,
  /** Deepest nesting of flow collections (`[`, `{`); block nesting this deep would not fit in maxChars. */
  maxDepth: 100,
};

/** Line of the first `[` or `{` nested deeper than maxDepth (brackets inside strings count too), or 0. */
function tooDeep(text: string): number {
  let depth = 0;
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) line++;
    else if (c === 91 || c === 123) {
      if (++depth > YAML_LIMITS.maxDepth) return line;
    } else if ((c === 93 || c === 125) && depth > 0) depth--;
  }
  return 0;
}

/**
 * Parsed YAML kept as JSON, one file per text under the user's cache folder (PDA_CACHE_DIR overrides it), named by
 * the SHA-256 of the text and of what the parse depends on: parsing the four config files cost a scripted run
 * ~80 ms of CPU (and loading the yaml library), reading their JSON well under 1 ms (#16). The key is the text
 * itself, so an edited file is parsed again, whatever its mtime. Only values JSON keeps exactly are stored (no
 * .inf/.nan, -0, dates, sets); an unwritable cache folder only means parsing every time.
 */
const YAML_CACHE_KEY = `pda-yaml-cache 1 ${JSON.stringify(YAML_LIMITS)}\n`;
/** Texts the cache keeps: past this, a new entry first removes the older half (by when they were written). */
export const YAML_CACHE_ENTRIES = 200;

function yamlCacheDir(): string {
  return process.env.PDA_CACHE_DIR || join(envPaths("pda", { suffix: "" }).cache, "yaml");
}

/** Whether JSON.parse(JSON.stringify(value)) gives back the same value. */
function jsonExact(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0);
    case "object":
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !jsonExact(value[i])) return false;
        return true;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) return false;
      for (const v of Object.values(value)) if (!jsonExact(v)) return false;
      return true;
    default:
      return false;
  }
}

function cachedValue(key: string): { value: unknown } | undefined {
  let json: string;
  try {
    json = readFileSync(join(yamlCacheDir(), `${key}.json`), "utf8");
  } catch {
    return undefined;
  }
  try {
    return { value: JSON.parse(json) as unknown };
  } catch {
    return undefined; // a torn or foreign file: parsed again, and written over
  }
}

function storeValue(key: string, value: unknown): void {
  if (!jsonExact(value)) return;
  const json = JSON.stringify(value);
  try {
    const dir = yamlCacheDir();
    mkdirSync(dir, { recursive: true });
    pruneCache(dir);
    // Written whole, then renamed: a process reading it at the same time sees the old file or the new one.
    const file = join(dir, `${key}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, json);
    renameSync(tmp, file);
  } catch {
    // No cache folder to write: the text is parsed again next time.
  }
}

/** Every edit of a config file is a new entry: the folder keeps the newest YAML_CACHE_ENTRIES / 2 past the limit. */
function pruneCache(dir: string): void {
  const names = readdirSync(dir).filter((n) => n.endsWith(".json"));
  if (names.length < YAML_CACHE_ENTRIES) return;
  const written = names.map((n) => ({
    n,
    t: statSync(join(dir, n), { throwIfNoEntry: false })?.mtimeMs ?? 0,
  }));
  written.sort((a, b) => a.t - b.t);
  for (const { n } of written.slice(0, names.length - YAML_CACHE_ENTRIES / 2)) {
    rmSync(join(dir, n), { force: true });
  }
}

/** A YAML text as a document (with its line counter), for the line of an error; every failure a ConfigError. */
function parseDocumentOf(
  file: string,
  text: string,
): { doc: ReturnType<typeof parseDocument>; lc: LineCounter } {
  const { LineCounter, parseDocument } = yaml();
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = e.linePos?.[0]?.line;
    throw new ConfigError(`${file}${line ? `:${line}` : ""}: ${e.message.split("\n")[0]}`);
  }
  return { doc, lc };
}

/**
 * Parse a YAML (or JSON) text within YAML_LIMITS. Every failure is a ConfigError naming `file` (and the line
 * where there is one): syntax errors, a file too big, too many aliases, nesting too deep. The value comes from
 * the cache when this text was parsed before (a fresh copy each time); `located()` parses the text into a
 * document for the line of a field, when an error needs one.
 */
export function parseYaml(
  file: string,
  text: string,
): { value: unknown; located: () => { doc: ReturnType<typeof parseDocument>; lc: LineCounter } } {
  if (text.length > YAML_LIMITS.maxChars) {
    throw new ConfigError(
      `${file}: ${text.length} characters, over the ${YAML_LIMITS.maxChars} a YAML file may have`,
    );
  }
  const deep = tooDeep(text);
  if (deep) {
    throw new ConfigError(`${file}:${deep}: nested more than ${YAML_LIMITS.maxDepth} levels deep`);
  }
  const key = createHash("sha256").update(YAML_CACHE_KEY).update(text).digest("hex");
  const cached = cachedValue(key);
  if (cached) return { value: cached.value, located: () => parseDocumentOf(file, text) };
  let parsed: { doc: ReturnType<typeof parseDocument>; lc: LineCounter };
  let value: unknown;
  try {
    parsed = parseDocumentOf(file, text);
    value = parsed.doc.toJS({ maxAliasCount: YAML_LIMITS.maxAliasCount });
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    // The yaml library throws a ReferenceError for an alias bomb.
    const why =
      e instanceof ReferenceError && /alias/i.test(e.message)
        ? `more than ${YAML_LIMITS.maxAliasCount} alias expansions (an alias bomb?)`
        : (e as Error).message.split("\n")[0];
    throw new ConfigError(`${file}: cannot read it as YAML: ${why}`, { cause: e });
  }
  storeValue(key, value);
  return { value, located: () => parsed };
}

/** Parse a YAML (or JSON) text and validate it; errors carry file:line and the field path. */
export function parseConfigText<S extends z.ZodType>(file: string, text: string, schema: S): z.infer<S> {
  const { value, located } = parseYaml(file, text);
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const { doc, lc } = located();
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
