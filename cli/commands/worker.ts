/** `pda worker --queue redis://…`: run `pda batch --queue` jobs, each as a session in this worker's store. */
import { dirname } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { configDir, configFile, loadProfile } from "../../config/index.js";
import { ConfigError } from "../../core/index.js";
import { createChannel, type HumanChannel } from "../../hil/index.js";
import { createModels, loadModelsConfig, type ModelRouter } from "../../llm/index.js";
import {
  BATCH_GROUP_COMMIT_MS,
  redisAddress,
  runWorker,
  setupFingerprint,
  type JobSetup,
  type WorkerDeps,
  type WorkerEvent,
} from "../../performance/index.js";
import { parseDurationMs } from "../duration.js";
import { runCommand } from "../context.js";
import { stopOnSignals } from "../stop.js";
import { globalOptions, openRuntime, type GlobalOptions } from "../runtime.js";

interface WorkerCliOptions extends GlobalOptions {
  queue: string;
  concurrency: string;
  stallInterval: string;
  name?: string;
  json?: boolean;
}

export function register(program: Command) {
  program
    .command("worker")
    .description(
      "take `pda batch --queue` jobs from Redis and run them, each as a session in this worker's store",
    )
    .requiredOption("--queue <url>", "the Redis the batch was submitted to: redis://host:6379[/db]")
    .option("--concurrency <n>", "queries in flight at once in this worker", "4")
    .option(
      "--stall-interval <duration>",
      "a job whose worker died is taken again after about this long (BullMQ's lock and stall check)",
      "30s",
    )
    .option("--name <name>", "this worker's name in the submitter's progress (default host:pid)")
    .option("--profile <name>", "the profile this worker's servers start with (config/profiles.yaml)")
    .option("--json", "each job's events as one JSON object a line on stdout (errors as JSON too)")
    .action(async (_opts, cmd: Command) => runCommand(() => work(globalOptions(cmd) as WorkerCliOptions)));
}

async function work(o: WorkerCliOptions): Promise<void> {
  const concurrency = Number(o.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new ConfigError(`--concurrency ${o.concurrency}: expected a whole number ≥ 1`);
  const stallMs = parseDurationMs(o.stallInterval, "--stall-interval");
  redisAddress(o.queue); // a malformed URL fails before any server starts
  const dir = configDir(o.config);
  const config = loadModelsConfig(dirname(configFile(dir, "models.yaml")));
  const fallback = createModels({ config, retry: { ...config.retry, max_retries: 0 } });
  const rt = await openRuntime(
    { ...o, hil: "policy:fail" },
    { models: { perception: fallback, decision: fallback }, groupCommitMs: BATCH_GROUP_COMMIT_MS },
  );
  const setups = jobSetups(dir, config);
  // Ctrl-C or SIGTERM stops taking jobs; those in flight are put back.
  const stop = stopOnSignals("stopping: queries in flight are put back for another worker", "stopping");
  try {
    await runWorker(
      {
        queue: o.queue,
        concurrency,
        stallMs,
        name: o.name,
        signal: stop.signal,
        onEvent: (e) => (o.json ? reportJson(e) : report(e, o.queue, !!o.verbose)),
      },
      {
        store: rt.store,
        recorder: rt.recorder,
        loop: rt.loop,
        setupFor: setups.setupFor,
        human: setups.human,
      },
    );
  } finally {
    stop.dispose();
    await rt.close();
    await fallback.close();
    await setups.close();
  }
}

/**
 * A job's --model and --profile as this worker's config resolves them, once per distinct setup, and its
 * --hil channel once per spec.
 */
function jobSetups(dir: string, config: ReturnType<typeof loadModelsConfig>) {
  const routers = new Map<string, { router: ModelRouter; chosen: ReturnType<WorkerDeps["setupFor"]> }>();
  const channels = new Map<string, HumanChannel>();
  return {
    setupFor(setup: JobSetup): ReturnType<WorkerDeps["setupFor"]> {
      const key = JSON.stringify([setup.model, setup.profile, setup.judge]);
      let entry = routers.get(key);
      if (!entry) {
        const router = createModels({
          model: setup.model ?? undefined,
          config,
          retry: { ...config.retry, max_retries: 0 },
        });
        const { profile } = loadProfile(dir, setup.profile ?? undefined);
        const roles = ["perception", "decision", ...(setup.judge ? ["judge"] : [])];
        const chosen = {
          models: {
            perception: router.forRole("perception"),
            decision: router.forRole("decision"),
            judge: setup.judge ? router.forRole("judge") : undefined,
          },
          profile,
          fingerprint: setupFingerprint(router.describe(roles), profile),
        };
        routers.set(key, (entry = { router, chosen }));
      }
      return entry.chosen;
    },
    human(spec: string): HumanChannel {
      let c = channels.get(spec);
      if (!c) channels.set(spec, (c = createChannel(spec, { isTTY: false })));
      return c;
    },
    async close() {
      for (const { router } of routers.values()) await router.close();
    },
  };
}

/** With --json: every event as one JSON line on stdout, for a supervisor to read. */
function reportJson(e: WorkerEvent): void {
  process.stdout.write(`${JSON.stringify(e)}\n`);
}

/** One line per job on stderr (the submitter shows the run's progress). */
function report(e: WorkerEvent, queue: string, verbose: boolean): void {
  const line = (s: string): void => void process.stderr.write(`${s}\n`);
  switch (e.type) {
    case "ready":
      return line(
        `worker ${e.name}: waiting for jobs on ${redisAddress(queue)} (concurrency ${e.concurrency})`,
      );
    case "job_start":
      return verbose ? line(`start ${e.key} (run ${e.run_id})`) : undefined;
    case "job_end":
      return line(`${e.key} ${e.status} ${(e.duration_ms / 1000).toFixed(1)} s (run ${e.run_id})`);
    case "job_put_back":
      return line(chalk.yellow(`${e.key} put back: ${e.reason}`));
    case "job_failed":
      return line(chalk.red(`${e.key} failed: ${e.reason}`));
    case "batch":
      if (e.event.type === "rate_limited")
        return line(`rate limited by ${e.event.provider}: waiting ${(e.event.delay_ms / 1000).toFixed(1)} s`);
      return;
  }
}
