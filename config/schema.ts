/** Zod schemas of the configuration files in config/: the source of truth for their shape. */
import { z } from "zod";

export const Budgets = z
  .object({
    max_steps: z.number().int().min(1).default(12),
    max_attempts_per_step: z.number().int().min(1).default(3),
    max_wall_ms: z.number().int().min(1).default(300_000),
    max_llm_calls: z.number().int().min(1).default(40),
    max_tokens: z.number().int().min(1).default(400_000),
    /** Money the session (with its sub-agents) may spend on models, priced from models.yaml; none by default. */
    max_cost_usd: z.number().positive().optional(),
  })
  .strict();
export type Budgets = z.infer<typeof Budgets>;

export const SandboxLimits = z
  .object({
    timeout_ms: z.number().int().min(1).default(30_000),
    memory_bytes: z
      .number()
      .int()
      .min(1 << 20)
      .default(64 << 20),
    stack_bytes: z
      .number()
      .int()
      .min(64 << 10)
      .default(1 << 20),
    max_tool_calls: z.number().int().min(0).default(50),
    max_result_bytes: z
      .number()
      .int()
      .min(1)
      .default(256 << 10),
    max_log_bytes: z
      .number()
      .int()
      .min(1)
      .default(64 << 10),
  })
  .strict();
export type SandboxLimits = z.infer<typeof SandboxLimits>;

/** A regular expression (JavaScript syntax) that compiles and never matches the empty string. */
export const RedactPattern = z.string().superRefine((source, ctx) => {
  let re: RegExp;
  try {
    re = new RegExp(source);
  } catch (e) {
    ctx.addIssue({ code: "custom", message: `not a valid regular expression: ${(e as Error).message}` });
    return;
  }
  if (re.test("")) ctx.addIssue({ code: "custom", message: `/${source}/ matches the empty string` });
});

export const Profile = z
  .object({
    description: z.string().default(""),
    budgets: Budgets.default(Budgets.parse({})),
    sandbox: SandboxLimits.default(SandboxLimits.parse({})),
    /** How many tools the decision sees (the top K by relevance and reliability, plus those the plan uses). */
    tool_top_k: z.number().int().min(1).default(12),
    strategy: z.enum(["conservative", "exploratory"]).default("conservative"),
    guards: z
      .object({
        query: z.boolean().default(true),
        code: z.boolean().default(true),
        result: z.boolean().default(true),
      })
      .strict()
      .default({ query: true, code: true, result: true }),
    /** Words or phrases taken out of queries (and said so to the model), or refused with action: block. */
    blocklist: z
      .array(
        z.union([
          z.string(),
          z.object({ term: z.string(), action: z.enum(["remove", "block"]).optional() }).strict(),
        ]),
      )
      .default([]),
    /** The terminal channel: how long a question waits for the person, and which policy answers then. */
    hil: z
      .object({
        timeout_ms: z.number().int().min(1).optional(),
        on_timeout: z.enum(["fail", "skip", "abort", "deny", "defer"]).default("defer"),
      })
      .strict()
      .default({ on_timeout: "defer" }),
    /** Memory hits shown to perception and decision. */
    memory_hits: z.number().int().min(0).default(3),
    /** An agent from agents.yaml that holds the conversation (its sub-agents and handoffs come with it). */
    agent: z.string().min(1).optional(),
    /**
     * Regular expressions whose matches the session store and batch CSVs redact, beside the built-in rules
     * (key formats, private keys, JWTs, URL passwords, `password=`-style pairs). Each is checked here.
     */
    redact: z.array(RedactPattern).default([]),
    /** Send traces and metrics over OTLP (configured by the standard OTEL_* variables), as `--otel` does. */
    otel: z.boolean().default(false),
  })
  .strict();
export type Profile = z.infer<typeof Profile>;

export const ProfilesFile = z
  .object({ default: z.string(), profiles: z.record(z.string(), Profile) })
  .strict();
export type ProfilesFile = z.infer<typeof ProfilesFile>;
