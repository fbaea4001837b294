/**
 * `config/agents.yaml`: narrow agents with typed results. Each agent has a description, an optional prompt
 * file (its role, in Markdown), a tool allowlist, the agents it may call and hand over to, a model per role,
 * budgets and sandbox limits over the profile's, and — for agents called as sub-agents — a result contract
 * (error_code enum + extra fields) with a recovery hint per code for its callers. Validated on load; every
 * error names file:line:field.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { Budgets, SandboxLimits, configFile, parseConfigText, type Profile } from "../../config/index.js";
import { ConfigError, type ToolInfo } from "../../core/index.js";
import { parseModelSpec } from "../../llm/index.js";

/** Agent names are identifiers: they are called as `agents.<name>(...)` in CODE. */
const AGENT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Names taken by the coordinator functions in the `agents` namespace. */
export const RESERVED_AGENT_NAMES = ["list", "send"] as const;
const ERROR_CODE = /^[A-Z][A-Z0-9_]*$/;
/** `*`, `server`, `server.tool`, with `*` wildcards in either part (e.g. `robot.*`, `math.add*`). */
const TOOL_PATTERN = /^[A-Za-z0-9_*-]+(\.[A-Za-z0-9_.*-]+)?$/;
/** Keys of the value `agents.<name>()` resolves to; a contract's extra fields may not take them. */
export const REPORT_KEYS = ["success", "error_code", "reason", "result", "tool_calls_used", "session_id"];
/** The code of success, and the code of a sub-agent that ended without a report; in every contract. */
export const SUCCESS_CODE = "NONE";
export const UNKNOWN_CODE = "UNKNOWN";
export const MODEL_ROLES = ["perception", "decision", "planner", "coder"] as const;
export type ModelRole = (typeof MODEL_ROLES)[number];

/** A schema whose fields are all optional and default-free: only what the agent sets overrides the profile. */
function overrides<S extends z.ZodObject>(schema: S) {
  const shape = Object.fromEntries(
    Object.entries(schema.shape).map(([k, v]) => {
      const t = v as z.ZodType & { unwrap?: () => z.ZodType };
      return [k, (t instanceof z.ZodDefault ? t.unwrap() : t).optional()];
    }),
  );
  return z.object(shape).strict() as unknown as z.ZodType<Partial<z.infer<S>>>;
}

const Name = z.string().regex(AGENT_NAME, "an agent name is an identifier (letters, digits, _)");
const Code = z.string().regex(ERROR_CODE, "an error code is UPPER_SNAKE_CASE, e.g. PICK_SEG_MISSED");

export const ResultField = z
  .object({
    type: z.enum(["string", "number", "boolean", "object", "array", "any"]).default("any"),
    description: z.string().default(""),
  })
  .strict();
export type ResultField = z.infer<typeof ResultField>;

export const ResultContract = z
  .object({
    /** The codes the agent may report; NONE (success) and UNKNOWN (no report) are always added. */
    error_codes: z.array(Code).default([]),
    /** Extra fields of the report, beside success, error_code, reason and result. */
    fields: z.record(z.string().regex(AGENT_NAME, "a field name is an identifier"), ResultField).default({}),
  })
  .strict();
export type ResultContract = z.infer<typeof ResultContract>;

export const AgentDef = z
  .object({
    description: z.string().min(1),
    /** Markdown with the agent's role and habits; relative to the agents.yaml folder. */
    prompt: z.string().min(1).optional(),
    /** Tools it may use: `*`, `server`, `server.tool`, `server.*`, `*.tool`. */
    tools: z
      .array(z.string().regex(TOOL_PATTERN, "a tool pattern is server, server.tool or a glob"))
      .default([]),
    /** Agents its CODE may call as `agents.<name>({task, ...})`. */
    subagents: z.array(Name).default([]),
    /** Agents it may hand the conversation to with `agent.handoff({to, reason})`. */
    handoffs: z.array(Name).default([]),
    /** `planner_coder`: a planner writes plan_text and the step, a coder writes the step's code (MALMM). */
    decision: z.enum(["single", "planner_coder"]).default("single"),
    /** `provider[:model]` per role; `--model` on the command line wins. */
    models: z.partialRecord(z.enum(MODEL_ROLES), z.string().min(1)).default({}),
    budgets: overrides(Budgets).default({}),
    sandbox: overrides(SandboxLimits).default({}),
    memory_hits: z.number().int().min(0).optional(),
    result: ResultContract.default({ error_codes: [], fields: {} }),
    /** What a caller should do on each error code (offered to the caller's decision prompt). */
    recovery: z.record(Code, z.string().min(1)).default({}),
  })
  .strict();
export type AgentDef = z.infer<typeof AgentDef>;

const AgentsFileShape = z
  .object({
    /** Recovery hints for codes every agent shares (UNKNOWN); an agent's own `recovery` wins. */
    recovery: z.record(Code, z.string().min(1)).default({}),
    /** Handoffs one session may make before it ends as failed (stops ping-pong). */
    max_handoffs: z.number().int().min(0).default(5),
    // Names are checked in agentsFileSchema, where the message can say what a name must be.
    agents: z.record(z.string(), AgentDef),
  })
  .strict();

/** The file schema, with the checks that need the file's folder (prompt files) and the whole file. */
export function agentsFileSchema(baseDir: string) {
  return AgentsFileShape.superRefine((file, ctx) => {
    const names = Object.keys(file.agents);
    const issue = (path: PropertyKey[], message: string) =>
      ctx.addIssue({ code: "custom", path: ["agents", ...path], message });
    for (const [name, a] of Object.entries(file.agents)) {
      if (!AGENT_NAME.test(name))
        issue(
          [name],
          `"${name}" is not an agent name: use an identifier (letters, digits, _), it is called as agents.<name>`,
        );
      if ((RESERVED_AGENT_NAMES as readonly string[]).includes(name))
        issue([name], `"${name}" is reserved (agents.${name} is a coordinator function)`);
      if (a.prompt && !existsSync(resolve(baseDir, a.prompt)))
        issue([name, "prompt"], `prompt file ${resolve(baseDir, a.prompt)} does not exist`);
      for (const key of ["subagents", "handoffs"] as const) {
        a[key].forEach((other, i) => {
          if (!file.agents[other])
            issue([name, key, i], `no agent named "${other}" (agents: ${names.join(", ")})`);
          else if (other === name) issue([name, key, i], `an agent cannot name itself in ${key}`);
        });
      }
      for (const field of Object.keys(a.result.fields)) {
        if (REPORT_KEYS.includes(field))
          issue([name, "result", "fields", field], `"${field}" is a report key; choose another name`);
      }
      const codes = contractCodes(a);
      for (const code of Object.keys(a.recovery)) {
        if (!codes.includes(code))
          issue([name, "recovery", code], `"${code}" is not one of its error codes (${codes.join(", ")})`);
      }
      for (const [role, spec] of Object.entries(a.models)) {
        try {
          parseModelSpec(spec);
        } catch (e) {
          issue([name, "models", role], (e as Error).message);
        }
      }
    }
    const cycle = findCycle(file.agents);
    if (cycle) issue([cycle[0]!, "subagents"], `sub-agents call each other in a cycle: ${cycle.join(" → ")}`);
  });
}

/** The error codes an agent can report: its own, NONE first, UNKNOWN last. */
export function contractCodes(a: Pick<AgentDef, "result">): string[] {
  return [...new Set([SUCCESS_CODE, ...a.result.error_codes, UNKNOWN_CODE])];
}

function findCycle(agents: Record<string, AgentDef>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (n: string): string[] | null => {
    if (state.get(n) === "done") return null;
    if (state.get(n) === "open") return [...path.slice(path.indexOf(n)), n];
    state.set(n, "open");
    path.push(n);
    for (const s of agents[n]?.subagents ?? []) {
      const c = visit(s);
      if (c) return c;
    }
    path.pop();
    state.set(n, "done");
    return null;
  };
  for (const n of Object.keys(agents)) {
    const c = visit(n);
    if (c) return c;
  }
  return null;
}

/** One agent as the team uses it: its definition with the prompt text read and the contract completed. */
export interface Agent extends AgentDef {
  name: string;
  /** The prompt file's text ("" without one). */
  promptText: string;
  /** contractCodes(): NONE, the agent's codes, UNKNOWN. */
  codes: string[];
  /** File-wide recovery hints with the agent's own over them, for codes of its contract. */
  recoveryTable: Record<string, string>;
}

export interface AgentsConfig {
  file: string;
  max_handoffs: number;
  agents: Record<string, Agent>;
}

/** Parse agents.yaml text (errors: file:line:field); prompt files resolve against `baseDir`. */
export function parseAgentsConfig(file: string, text: string, baseDir = dirname(file)): AgentsConfig {
  const parsed = parseConfigText(file, text, agentsFileSchema(baseDir));
  const agents: Record<string, Agent> = {};
  for (const [name, def] of Object.entries(parsed.agents)) {
    const codes = contractCodes(def);
    const shared = Object.fromEntries(Object.entries(parsed.recovery).filter(([c]) => codes.includes(c)));
    agents[name] = {
      ...def,
      name,
      promptText: def.prompt ? readFileSync(resolve(baseDir, def.prompt), "utf8").trim() : "",
      codes,
      recoveryTable: { ...shared, ...def.recovery },
    };
  }
  return { file, max_handoffs: parsed.max_handoffs, agents };
}

/** agents.yaml from a config folder (the bundled one when the folder has none). */
export function loadAgentsConfig(dir: string): AgentsConfig {
  const file = configFile(dir, "agents.yaml");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  return parseAgentsConfig(isAbsolute(file) ? file : resolve(file), text);
}

/** The agent a profile names, or a ConfigError naming the profile and the known agents. */
export function agentOf(config: AgentsConfig, name: string, where = "profile"): Agent {
  const a = config.agents[name];
  if (!a) {
    throw new ConfigError(
      `${where}: agent "${name}" is not in ${config.file} (agents: ${Object.keys(config.agents).join(", ")})`,
    );
  }
  return a;
}

/** The profile an agent runs under: the caller's, with the agent's budgets, sandbox limits and memory hits. */
export function agentProfile(a: Agent, base: Profile): Profile {
  return {
    ...base,
    budgets: { ...base.budgets, ...a.budgets },
    sandbox: { ...base.sandbox, ...a.sandbox },
    memory_hits: a.memory_hits ?? base.memory_hits,
    agent: a.name,
  };
}

function globRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${body}$`);
}

/** Whether a tool is in an allowlist of patterns (see AgentDef.tools). */
export function toolAllowed(patterns: readonly string[], tool: Pick<ToolInfo, "server" | "name">): boolean {
  return patterns.some((p) => {
    if (p === "*") return true;
    const dot = p.indexOf(".");
    const server = dot < 0 ? p : p.slice(0, dot);
    const name = dot < 0 ? "*" : p.slice(dot + 1);
    return globRegExp(server).test(tool.server) && globRegExp(name).test(tool.name);
  });
}
