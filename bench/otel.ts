/**
 * What OpenTelemetry export costs. Two measures, each against a baseline taken in the same run:
 *
 * - per step, in process: the recorder writes of a CODE step (step begun, tool call, two model calls, step
 *   finished; a session start and finish around every few steps) through the telemetry recorder with the real
 *   SDK and the http/protobuf exporter sending to a receiver on 127.0.0.1, against the same writes to a recorder
 *   that keeps nothing. CPU time of the process (export serialization included: spans are flushed before the
 *   clock stops), divided by the steps.
 * - per run: `pda run` of the calculator demo (scripted model, the real math server) as a child process, with and
 *   without OTEL_EXPORTER_OTLP_ENDPOINT, alternating; the child's own CPU time (user + system) at exit.
 *
 * Prints JSON.   node dist/bench/otel.js [--steps 20000] [--runs 6]
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { distPath, newSession, nullRecorder, type SessionRecorder, type Step } from "../core/index.js";
import { openTelemetry } from "../telemetry/index.js";
import { startReceiver } from "../telemetry/tests/receiver.js";

const { values } = parseArgs({
  options: { steps: { type: "string", default: "20000" }, runs: { type: "string", default: "6" } },
});
const STEPS = Number(values.steps);
const RUNS = Number(values.runs);
const STEPS_PER_SESSION = 5;

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** The writes of `steps` CODE steps, sessions of STEPS_PER_SESSION steps each. */
function writeSteps(r: SessionRecorder, steps: number, tag: string): void {
  const prompt = "You are the decision of an agent. ".repeat(100);
  for (let i = 0; i < steps; i += STEPS_PER_SESSION) {
    const id = `${tag}-${i}`;
    const s = newSession("What is 32 + 5 - 3 * 2", id, new Date().toISOString());
    r.startSession(s);
    for (let k = 0; k < STEPS_PER_SESSION; k++) {
      const at = new Date().toISOString();
      const llm = {
        role: "decision",
        provider: "openai",
        model: "gpt-4.1-mini",
        ok: true,
        input_tokens: 900,
        output_tokens: 120,
        latency_ms: 800,
        attempts: 1,
        cost_usd: 0.0004,
        prompt,
        raw_response: '{"type":"CODE"}',
        started_at: at,
      };
      r.recordLlmCall(id, llm);
      const step: Step = {
        index: k,
        description: "add",
        type: "CODE",
        status: "pending",
        attempts: 1,
        plan_version: 1,
      };
      r.saveStep(id, step);
      r.recordToolCall(id, k, {
        server: "math",
        tool: "add",
        ok: true,
        latency_ms: 2,
        bytes: 3,
        started_at: at,
      });
      r.recordLlmCall(id, { ...llm, role: "perception" });
      r.saveStep(id, { ...step, status: "completed" });
    }
    s.status = "succeeded";
    r.finishSession(s);
  }
}

async function perStep(url: string) {
  Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_METRIC_EXPORT_INTERVAL: "1000" });
  const base: number[] = [];
  const traced: number[] = [];
  const chunk = Math.max(STEPS_PER_SESSION, Math.floor(STEPS / 10));
  writeSteps(nullRecorder, chunk, "warm");
  for (let round = 0; round < 10; round++) {
    let t = cpuMs();
    writeSteps(nullRecorder, chunk, `b${round}`);
    base.push((cpuMs() - t) / chunk);
    const telemetry = (await openTelemetry({ flag: true, redact: (x) => x }))!;
    t = cpuMs();
    writeSteps(telemetry.recorder(nullRecorder), chunk, `t${round}`);
    await telemetry.shutdown(); // the export's CPU is counted
    traced.push((cpuMs() - t) / chunk);
  }
  return {
    steps: chunk * 10,
    baseline_ms_per_step: +median(base).toFixed(4),
    otel_ms_per_step: +median(traced).toFixed(4),
    overhead_ms_per_step: +(median(traced) - median(base)).toFixed(4),
  };
}

function pdaRun(dir: string, env: Record<string, string>): Promise<number> {
  const probe = join(dir, "cpu.cjs");
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [
        distPath("main.js"),
        "--db",
        join(dir, "pda.db"),
        "run",
        "--model",
        "scripted:config/demo/calculator.yaml",
        "What is 32 + 5 - 3 * 2",
      ],
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: dir,
          NO_COLOR: "1",
          NODE_OPTIONS: `--require ${probe}`,
          ...env,
        },
      },
      (err, _stdout, stderr) => {
        const m = /cpu_ms=([\d.]+)/.exec(stderr);
        if (err || !m) reject(new Error(`pda run failed: ${err?.message ?? ""} ${stderr}`));
        else resolve(Number(m[1]));
      },
    ),
  );
}

async function perRun(url: string, dir: string) {
  writeFileSync(
    join(dir, "cpu.cjs"),
    `process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write("cpu_ms=" + (u.user + u.system) / 1000 + "\\n"); });`,
  );
  const base: number[] = [];
  const traced: number[] = [];
  await pdaRun(dir, {}); // warm the tool-list cache and the disk
  for (let i = 0; i < RUNS; i++) {
    base.push(await pdaRun(dir, {}));
    traced.push(await pdaRun(dir, { OTEL_EXPORTER_OTLP_ENDPOINT: url }));
  }
  return {
    runs: RUNS,
    baseline_cpu_ms: +median(base).toFixed(1),
    otel_cpu_ms: +median(traced).toFixed(1),
    cpu_ratio: +(median(traced) / median(base)).toFixed(3),
  };
}

const rx = await startReceiver();
const dir = mkdtempSync(join(tmpdir(), "pda-bench-otel-"));
try {
  const step = await perStep(rx.url);
  const run = await perRun(rx.url, dir);
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "otel",
        node: process.version,
        cpus: cpus().length,
        load_average_1m: Math.round(loadavg()[0]! * 10) / 10,
        protocol: "http/protobuf",
        per_step: step,
        per_run: run,
        spans_received: rx.raw.filter((q) => q.path === "/v1/traces").length > 0,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await rx.close();
  rmSync(dir, { recursive: true, force: true });
}
