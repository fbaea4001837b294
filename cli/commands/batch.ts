/**
 * `pda batch <file> --out <dir>`: a query file through the agent, N at a time, unattended and resumable;
 * in this process, or with `--queue redis://…` on `pda worker` processes.
 */
import { dirname } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { configDir, configFile, loadProfile } from "../../config/index.js";
import { ConfigError, ModelError } from "../../core/index.js";
import { createChannel } from "../../hil/index.js";
import { createModels, loadModelsConfig, type ModelRouter } from "../../llm/index.js";
import {
  BATCH_GROUP_COMMIT_MS,
  createProgress,
  readBatchState,
  readQueryFile,
  runBatch,
  runQueued,
  setupFingerprint,
  type BatchOptions,
  type BatchResult,
} from "../../performance/index.js";
import { runCommand } from "../context.js";
import { stopOnSignals } from "../stop.js";
import { parseDurationMs } from "../duration.js";
import {
  dbPath,
  globalOptions,
  openRuntime,
  openStore,
  type GlobalOptions,
  type Runtime,
} from "../runtime.js";

interface BatchCliOptions extends GlobalOptions {
  out: string;
  concurrency: string;
  resume?: boolean;
  force?: boolean;
  timeout?: string;
  maxSteps?: string;
  maxLlmCalls?: string;
  maxTokens?: string;
  maxCostUsd?: string;
  judge?: boolean;
  tolerance?: string;
  hil?: string;
  memory?: boolean;
  queue?: string;
}

function positiveNumber(text: string | undefined, what: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${what} ${text}: expected a number > 0`);
  return n;
}

function positiveInt(text: string | undefined, what: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${what} ${text}: expected a whole number ≥ 1`);
  return n;
}

export function register(program: Command) {
  program
    .command("batch")
    .description("run every query of a CSV or JSONL file; write per-query and per-tool CSVs and a summary")
    .argument("<file>", "queries: CSV (Query, Tools Needed, Complexity[, Expected]) or JSONL")
    .requiredOption(
      "--out <dir>",
      "output folder (test_queries_output.csv, tool_performance_status.csv, summary.md)",
    )
    .option(
      "--concurrency <n>",
      "queries in flight at once; with --queue: model calls in flight to each provider across all workers (each worker's own --concurrency sets its queries)",
      "4",
    )
    .option("--resume", "finish the run in --out: only the queries not done yet")
    .option("--force", "start a new run in an --out folder that already holds one")
    .option(
      "--queue <url>",
      "run the queries on `pda worker` processes through Redis (redis://host:6379[/db]) instead of here",
    )
    .option(
      "--timeout <duration>",
      "per query: 30s, 2m, 500ms or plain milliseconds (default: the profile's max_wall_ms)",
    )
    .option("--max-steps <n>", "per-query step budget")
    .option("--max-llm-calls <n>", "per-query model-call budget")
    .option("--max-tokens <n>", "per-query token budget")
    .option("--max-cost-usd <x>", "per-query cost budget in USD, priced from models.yaml costs")
    .option("--json", "print the run's figures and files as JSON")
    .option("--judge", "decide Correct with an LLM judge instead of exact / numeric matching")
    .option("--tolerance <x>", "relative tolerance of numeric matches", "1e-6")
    .option(
      "--model <spec>",
      "model as provider[:model], e.g. gemini, gemini:gemini-2.5-flash, scripted:<file>",
    )
    .option("--profile <name>", "budgets and limits from config/profiles.yaml")
    .option(
      "--hil <spec>",
      "who answers the agent's questions: policy:<fail|skip|abort|deny|defer|defaults> or scripted:<file>",
      "policy:fail",
    )
    .option(
      "--memory",
      "show the agent past sessions created before this run started (default off: runs stay comparable)",
    )
    .option("--no-memory", "show the agent no past sessions (the default)")
    .action(async (file: string, _opts, cmd: Command) =>
      runCommand(() => batch(file, globalOptions(cmd) as BatchCliOptions)),
    );
}

async function batch(file: string, o: BatchCliOptions): Promise<number> {
  const options = batchOptions(file, o);
  // The models of models.yaml (or --model), with their own transport retries off: the batch's shared
  // limiter sees every 429 and does the retrying.
  const config = loadModelsConfig(dirname(configFile(configDir(o.config), "models.yaml")));
  const router = createModels({ model: o.model, config, retry: { ...config.retry, max_retries: 0 } });
  options.model = router
    .describe(["perception", "decision"])
    .map((m) => `${m.role} ${m.spec}`)
    .join(", ");
  // Ctrl-C or SIGTERM stops the run, kept for --resume.
  const stop = stopOnSignals(
    o.queue
      ? "stopping: the workers go on; re-attach with the same command and --resume"
      : "stopping: queries in flight are cancelled and kept for --resume",
    "interrupted",
  );
  const progress = createProgress({ tty: !!process.stderr.isTTY, verbose: o.verbose });
  options.signal = stop.signal;
  options.onEvent = (e) => progress.onEvent(e);
  try {
    const r = o.queue ? await submitToQueue(options, o, o.queue, router) : await runHere(options, o, router);
    progress.stop();
    return printResult(r, !!o.json);
  } finally {
    progress.stop();
    stop.dispose();
    await router.close();
  }
}

/** The command line checked and turned into the run's options, before any server or connection starts. */
function batchOptions(file: string, o: BatchCliOptions): BatchOptions {
  const concurrency = positiveInt(o.concurrency, "--concurrency")!;
  const tolerance = Number(o.tolerance);
  if (!Number.isFinite(tolerance) || tolerance < 0)
    throw new ConfigError(`--tolerance ${o.tolerance}: expected a number ≥ 0`);
  const hil = o.hil ?? "policy:fail";
  if (hil.startsWith("terminal"))
    throw new ConfigError("pda batch runs unattended: use --hil policy:<name> or --hil scripted:<file>");
  createChannel(hil, { isTTY: false }); // a bad spec fails here, before anything starts
  const budgets = {
    ...(o.maxSteps ? { max_steps: positiveInt(o.maxSteps, "--max-steps") } : {}),
    ...(o.maxLlmCalls ? { max_llm_calls: positiveInt(o.maxLlmCalls, "--max-llm-calls") } : {}),
    ...(o.maxTokens ? { max_tokens: positiveInt(o.maxTokens, "--max-tokens") } : {}),
    ...(o.maxCostUsd ? { max_cost_usd: positiveNumber(o.maxCostUsd, "--max-cost-usd") } : {}),
  };
  readQueryFile(file); // a bad query file fails here, before any server is started
  // A folder's run lives in the store it was started with, unless --db says otherwise.
  const db = o.db ?? readBatchState(o.out)?.db ?? dbPath(o);
  return {
    input: file,
    out: o.out,
    db,
    model: o.model ?? "",
    concurrency,
    resume: o.resume,
    force: o.force,
    timeoutMs: o.timeout ? parseDurationMs(o.timeout, "--timeout") : undefined,
    budgets,
    judge: o.judge,
    tolerance,
    hil,
    memory: o.memory,
  };
}

/** The queries in this process, N at a time, against the configured MCP servers. */
async function runHere(options: BatchOptions, o: BatchCliOptions, router: ModelRouter): Promise<BatchResult> {
  const models = {
    perception: router.forRole("perception"),
    decision: router.forRole("decision"),
    judge: o.judge ? router.forRole("judge") : undefined,
  };
  await router.prepare(); // the local model file, before any query is started
  const rt: Runtime = await openRuntime(
    { ...o, db: options.db, hil: options.hil },
    { models: { perception: router, decision: router }, groupCommitMs: BATCH_GROUP_COMMIT_MS },
  );
  try {
    const onEvent = options.onEvent;
    const r = await runBatch(
      {
        ...options,
        // The batch run is the parent span of its sessions (telemetry/).
        onEvent: (e) => {
          if (e.type === "start") rt.telemetry?.batchStart(e.run_id, { "pda.batch.queries": e.total });
          onEvent?.(e);
        },
      },
      { store: rt.store, recorder: rt.recorder, models, profile: rt.profile, loop: rt.loop },
    );
    rt.telemetry?.batchEnd(r.status);
    return r;
  } finally {
    rt.telemetry?.batchEnd("error"); // a run that threw; no-op when it ended above
    await rt.close();
  }
}

/** The queries as BullMQ jobs for `pda worker`s; this process only waits and adopts their results. */
async function submitToQueue(
  options: BatchOptions,
  o: BatchCliOptions,
  queue: string,
  router: ModelRouter,
): Promise<BatchResult> {
  const { profile } = loadProfile(configDir(o.config), o.profile);
  const roles = ["perception", "decision", ...(o.judge ? ["judge"] : [])];
  const fingerprint = setupFingerprint(router.describe(roles), profile);
  const store = openStore({ ...o, db: options.db }, profile.redact);
  try {
    return await runQueued(
      { ...options, queue, setup: { model: o.model ?? null, profile: o.profile ?? null, fingerprint } },
      { store },
    );
  } finally {
    store.close();
  }
}

/** The run's figures and files on stdout (as JSON with --json); why it stopped, if it did, on stderr. */
function printResult(r: BatchResult, json: boolean): number {
  const done = r.outcomes.length;
  const ok = r.outcomes.filter((x) => x.status === "succeeded").length;
  const checked = r.outcomes.filter((x) => x.correct !== null);
  const correct = checked.filter((x) => x.correct).length;
  const figures = {
    status: r.status,
    done,
    total: done + r.remaining,
    succeeded: ok,
    correct,
    checked: checked.length,
  };
  process.stdout.write(
    json
      ? `${JSON.stringify({ ...figures, error: r.error && { code: r.error.code, message: r.error.message }, files: r.files }, null, 2)}\n`
      : `${done}/${done + r.remaining} queries done, ${ok} succeeded, ${correct}/${checked.length} correct\n` +
          `${r.files.queries}\n${r.files.tools}\n${r.files.summary}\n`,
  );
  if (r.status === "stopped" && r.error) {
    process.stderr.write(
      `${chalk.red("stopped")} ${r.error.message}\n${r.remaining} queries left: finish them with --resume\n`,
    );
    // A model that cannot be used (no key, quota spent) is exit 3, like any unreachable model.
    return r.error instanceof ModelError ? 3 : Math.max(1, r.error.exitCode);
  }
  if (r.status === "interrupted") {
    process.stderr.write(`${r.remaining} queries left: finish them with the same command and --resume\n`);
    return 130;
  }
  return 0;
}
