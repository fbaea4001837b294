#!/usr/bin/env node
/**
 * The tabletop robot simulator as an MCP server over stdio (or Streamable HTTP with `--http host:port`), both
 * protocol eras (2025 and 2026-07-28).
 * Per-run settings come from flags or the environment:
 *   --failures on|off|JSON   (PDA_ROBOT_FAILURES)  failure modes; JSON fields override the "on" defaults
 *   --feedback verbose|state|silent (PDA_ROBOT_FEEDBACK)
 *   --no-check               (PDA_ROBOT_CHECK=0)   disable check_task_completion
 *   --max-actions N          (PDA_ROBOT_MAX_ACTIONS)
 *   --report FILE            (PDA_ROBOT_REPORT)    append one JSON line per finished or abandoned episode
 * The physics engine loads on the first reset, so the server starts fast.
 */
// zod's settings first: they apply to the schemas the imports below build as they load.
import "../../core/zod-config.js";
import { appendFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/server";
import { serveEras } from "../common/serve-eras.js";
import { lazyValidator } from "../common/validator.js";
import { Feedback, parseFailures, RunSettings } from "./schemas.js";
import { registerRobotTools, type RobotState } from "./tools.js";
import type { RobotEnv } from "./env.js";

export interface ServerOptions {
  settings: RunSettings;
  report?: string;
}

/** Read the run settings from argv and the environment; a bad value throws with what and where. */
export function serverOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): ServerOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      failures: { type: "string" },
      feedback: { type: "string" },
      "no-check": { type: "boolean" },
      "max-actions": { type: "string" },
      report: { type: "string" },
      http: { type: "string" },
      "allow-host": { type: "string", multiple: true },
    },
    strict: true,
  });
  const failuresText = values.failures ?? env.PDA_ROBOT_FAILURES ?? "off";
  const feedbackText = values.feedback ?? env.PDA_ROBOT_FEEDBACK ?? "verbose";
  const feedback = Feedback.safeParse(feedbackText);
  if (!feedback.success)
    throw new Error(`--feedback must be verbose, state or silent, got ${JSON.stringify(feedbackText)}`);
  const maxText = values["max-actions"] ?? env.PDA_ROBOT_MAX_ACTIONS;
  const maxActions = maxText === undefined ? undefined : Number(maxText);
  if (maxActions !== undefined && (!Number.isInteger(maxActions) || maxActions < 1)) {
    throw new Error(`--max-actions must be a whole number ≥ 1, got ${JSON.stringify(maxText)}`);
  }
  const settings = RunSettings.parse({
    failures: parseFailures(failuresText),
    feedback: feedback.data,
    allow_check: !(values["no-check"] || env.PDA_ROBOT_CHECK === "0"),
    ...(maxActions === undefined ? {} : { max_actions: maxActions }),
  });
  return { settings, report: values.report ?? env.PDA_ROBOT_REPORT };
}

/** `state`: the simulator to drive, shared by the servers that serve one client (a fresh one by default). */
export function createRobotServer(
  options: ServerOptions,
  state: RobotState = {},
): {
  server: McpServer;
  env: () => RobotEnv | undefined;
} {
  const server = new McpServer(
    { name: "pda-robot", version: "0.1.0" },
    { jsonSchemaValidator: lazyValidator() },
  );
  const report = options.report;
  const handle = registerRobotTools(
    server,
    options.settings,
    {
      onEnv: (env) => {
        if (report) env.onEpisodeEnd = (record) => appendFileSync(report, `${JSON.stringify(record)}\n`);
      },
    },
    state,
  );
  return { server, env: handle.env };
}

/** What the server does when run as a program (also what its start-up snapshot runs: snapshot.ts). */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  let options: ServerOptions;
  try {
    options = serverOptions(argv);
  } catch (e) {
    process.stderr.write(`pda-robot: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  }
  const envs: (() => RobotEnv | undefined)[] = [];
  // A 2025-era client (a stdio connection, an HTTP session) gets a simulator of its own; the 2026-07-28 era
  // has no session (over HTTP, a server per request), so all its requests drive one simulator of the process.
  const modern: RobotState = {};
  await serveEras(
    (era) => {
      if (era === "modern") return createRobotServer(options, modern).server;
      const made = createRobotServer(options);
      envs.push(made.env);
      return made.server;
    },
    argv,
    {
      onShutdown: () => {
        modern.env?.close();
        envs.forEach((e) => e()?.close());
      },
    },
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
