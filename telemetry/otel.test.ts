/**
 * OpenTelemetry export end to end: `pda run`, `pda batch` and `pda export --otel` as child processes with the
 * scripted model, the real math MCP server and a real store, sending through the real OTLP exporters to a
 * receiver on 127.0.0.1 (http/json, http/protobuf and gRPC; protobuf decoded with the official definitions).
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { cliFolder, snap, type CliFolder } from "../cli/harness.js";
import { distPath } from "../core/index.js";
import { scriptedGeminiHandler, startFakeGemini, startFakeOpenAI } from "../testing/index.js";
import { startRedis } from "../performance/testing/redis.js";
import { startReceiver, type ReceivedSpan, type Receiver } from "./tests/receiver.js";

let cli: CliFolder;
let rx: Receiver;

const step = (code: string, description = "do it") => ({
  plan_text: ["Step 0: do it"],
  step_index: 0,
  description,
  type: "CODE",
  code,
});
const report = (what: string, value: string) =>
  `await agent.report({success: true, error_code: "NONE", reason: "${what}", result: ${value}});`;

/** The team script: boss calls adder and multiplier from one CODE step; each runs one tool. */
function teamScript(): string {
  const path = join(cli.dir, "team.yaml");
  writeFileSync(
    path,
    stringify({
      perception: [snap(false), snap(true, "5 and 42")],
      decision: [
        step(
          'const [a, m] = await parallel([() => agents.adder({task: "add 2 and 3"}), () => agents.multiplier({task: "multiply 6 by 7"})]);\nreturn [a.result, m.result];',
        ),
      ],
      "adder.perception": [snap(false)],
      "adder.decision": [step(`const r = await add(2, 3);\n${report("added", "r")}`)],
      "multiplier.perception": [snap(false)],
      "multiplier.decision": [step(`const r = await multiply(6, 7);\n${report("multiplied", "r")}`)],
    }),
  );
  return `scripted:${path}`;
}

/** A one-step session computing 2+3, `n` times over (for a batch of n queries). */
function plainScript(n = 1): string {
  const path = join(cli.dir, `plain${n}.yaml`);
  writeFileSync(
    path,
    stringify({
      perception: Array.from({ length: n }, () => [snap(false), snap(true, "5")]).flat(),
      decision: Array.from({ length: n }, () => step("return await add(2, 3);", "add")),
    }),
  );
  return `scripted:${path}`;
}

const otelEnv = (extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  ...extra,
});

const sessionOf = (trace: string) => /^session (\S+)/m.exec(trace)![1]!;
const byId = (spans: ReceivedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));
const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string) => {
  const found = named(spans, name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
};

beforeAll(async () => {
  cli = cliFolder("pda-otel-");
  rx = await startReceiver();
  writeFileSync(
    join(cli.config, "profiles.yaml"),
    stringify({
      default: "default",
      profiles: { default: {}, team: { agent: "boss" }, traced: { otel: true } },
    }),
  );
  writeFileSync(
    join(cli.config, "agents.yaml"),
    stringify({
      agents: {
        boss: { description: "Delegates arithmetic.", subagents: ["adder", "multiplier"] },
        adder: { description: "Adds.", tools: ["math.add"] },
        multiplier: { description: "Multiplies.", tools: ["math.multiply"] },
      },
    }),
  );
});
afterAll(async () => {
  await rx.close();
  cli.close();
});
beforeEach(() => rx.reset());

/**
 * The trace of the team session (boss calling adder and multiplier from one CODE step), however it was sent:
 * span names, parent links, attributes and times.
 */
function checkTeamTrace(live: ReceivedSpan[], teamSession: string): void {
  const spans = byId(live);

  const boss = one(live, "invoke_agent boss");
  expect(boss.parentSpanId).toBeUndefined();
  expect(boss.attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "boss",
    "gen_ai.conversation.id": teamSession,
    "pda.session.status": "succeeded",
  });
  expect(boss.resource["service.name"]).toBe("pda");
  expect(new Set(live.map((s) => s.traceId)).size).toBe(1);

  const bossStep = live.find((s) => s.name === "pda.step CODE" && s.parentSpanId === boss.spanId)!;
  expect(bossStep.attributes).toMatchObject({ "pda.step.index": 0, "pda.step.status": "completed" });
  for (const [agent, tool] of [
    ["adder", "add"],
    ["multiplier", "multiply"],
  ] as const) {
    const sub = one(live, `invoke_agent ${agent}`);
    expect(sub.parentSpanId, `${agent} under the boss's CODE step`).toBe(bossStep.spanId);
    expect(sub.attributes["pda.session.parent_id"]).toBe(teamSession);
    const exec = one(live, `execute_tool ${tool}`);
    expect(exec.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool,
      "pda.tool.server": "math",
    });
    const subStep = spans.get(exec.parentSpanId!)!;
    expect(subStep.name).toBe("pda.step CODE");
    expect(subStep.parentSpanId).toBe(sub.spanId);
    // A child span lies within its parent.
    expect(exec.start).toBeGreaterThanOrEqual(subStep.start);
    expect(exec.end).toBeLessThanOrEqual(subStep.end);
    expect(sub.start).toBeGreaterThanOrEqual(bossStep.start);
    expect(sub.end).toBeLessThanOrEqual(bossStep.end);
  }

  const chats = live.filter((s) => s.name.startsWith("chat "));
  // boss: perception, decision, perception; each sub-agent: perception, decision.
  expect(chats.length).toBe(7);
  for (const c of chats) {
    expect(c.kind).toBe(3); // CLIENT
    expect(c.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "scripted",
    });
    expect(typeof c.attributes["gen_ai.request.model"]).toBe("string");
    expect(c.attributes["gen_ai.usage.input_tokens"]).toEqual(expect.any(Number));
    expect(c.attributes["gen_ai.usage.output_tokens"]).toEqual(expect.any(Number));
    expect(["perception", "decision"]).toContain(c.attributes["pda.model.role"]);
    // A scripted reply is a whole one.
    expect(c.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
    // Content only when asked for.
    expect(c.attributes["gen_ai.input.messages"]).toBeUndefined();
    expect(c.attributes["gen_ai.output.messages"]).toBeUndefined();
  }
  expect(boss.attributes["gen_ai.input.messages"]).toBeUndefined();
  expect(JSON.stringify(live)).not.toContain("2+3 and 6*7?");
}

describe("OpenTelemetry export", () => {
  let teamSession: string;
  let live: ReceivedSpan[];

  it("pda run with a team: invoke_agent, step, chat and execute_tool spans, sub-agents under the calling step", async () => {
    const r = await cli.pda(
      ["run", "--profile", "team", "--model", teamScript(), "2+3 and 6*7?"],
      undefined,
      otelEnv(),
    );
    expect(r.stderr).not.toMatch(/^(error|warning)|OpenTelemetry/m);
    expect(r.code).toBe(0);
    teamSession = sessionOf(r.stderr);
    // Spans are flushed on exit: everything is there once the process has ended.
    await rx.until(() => named(rx.spans, "invoke_agent boss").length === 1, "boss span");
    live = [...rx.spans];
    checkTeamTrace(live, teamSession);
    await rx.until(() => rx.metrics.includes("gen_ai.client.token.usage"), "token metric");
    expect(rx.metrics).toEqual(
      expect.arrayContaining([
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "pda.tool.calls",
      ]),
    );
  });

  it("pda export --otel sends the stored session with its stored times and the same tree", async () => {
    const r = await cli.pda(["export", teamSession, "--otel"], undefined, otelEnv());
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`session ${teamSession} sent over OTLP`);
    await rx.until(() => named(rx.spans, "invoke_agent boss").length === 1, "exported boss span");
    const exported = [...rx.spans];
    const shape = (spans: ReceivedSpan[]) => {
      const ids = byId(spans);
      return spans.map((s) => `${ids.get(s.parentSpanId ?? "")?.name ?? "-"} > ${s.name}`).sort();
    };
    expect(shape(exported)).toEqual(shape(live));
    // Model and tool calls: exactly the live times (both come from the records' started_at and latency).
    const times = (spans: ReceivedSpan[]) =>
      spans
        .filter((s) => /^(chat|execute_tool) /.test(s.name))
        .map((s) => `${s.name} ${s.start.toFixed(3)} ${s.end.toFixed(3)}`)
        .sort();
    expect(times(exported)).toEqual(times(live));
    // Sessions and steps: the times the store holds.
    const db = new Database(join(cli.dir, "pda.db"), { readonly: true });
    try {
      const row = db
        .prepare("SELECT created_at, finished_at FROM sessions WHERE id = ?")
        .get(teamSession) as {
        created_at: string;
        finished_at: string;
      };
      const boss = one(exported, "invoke_agent boss");
      expect(boss.start).toBe(Date.parse(row.created_at));
      expect(boss.end).toBe(Date.parse(row.finished_at));
      const step = db
        .prepare("SELECT created_at FROM steps WHERE session_id = ? AND idx = 0")
        .get(teamSession) as {
        created_at: string;
      };
      const bossStep = exported.find((s) => s.name === "pda.step CODE" && s.parentSpanId === boss.spanId)!;
      expect(bossStep.start).toBe(Date.parse(step.created_at));
    } finally {
      db.close();
    }
    expect(new Set(exported.map((s) => s.traceId)).size).toBe(1);
    expect(exported[0]!.traceId).not.toBe(live[0]!.traceId);
  });

  /**
   * One session against a real model client: each chat span's gen_ai.response.finish_reasons (in call order)
   * live, from `pda export --otel`, and in `pda show`, which read it back from the llm_calls row.
   */
  async function finishReasons(args: string[], env: Record<string, string>) {
    const r = await cli.pda(["run", ...args, "What is 2+3?"], undefined, otelEnv(env));
    expect(r.code, r.stderr).toBe(0);
    const id = sessionOf(r.stderr);
    const reasons = () =>
      rx.spans
        .filter((s) => s.name.startsWith("chat "))
        .sort((a, b) => a.start - b.start)
        .map((s) => [s.attributes["pda.model.role"], s.attributes["gen_ai.response.finish_reasons"]]);
    await rx.until(() => named(rx.spans, "invoke_agent pda").length === 1, "session span");
    const live = reasons();
    rx.reset();
    const e = await cli.pda(["export", id, "--otel"], undefined, otelEnv());
    expect(e.code, e.stderr).toBe(0);
    await rx.until(() => named(rx.spans, "invoke_agent pda").length === 1, "exported session span");
    expect(reasons(), "exported as sent live").toEqual(live);
    const shown = (await cli.pda(["show", id])).stdout;
    return { live, shown, spans: [...rx.spans] };
  }

  it("chat spans carry the provider's finish reason: the real Gemini client, live, stored and exported", async () => {
    const script = scriptedGeminiHandler({
      perception: [
        { text: '{"entities": ["', finishReason: "MAX_TOKENS", usage: { input: 50, output: 400 } },
        { json: snap(false) },
        { json: snap(true, "5") },
      ],
      decision: [{ json: step("return await add(2, 3);", "add") }],
    });
    const gemini = await startFakeGemini({ handler: script.handler });
    try {
      const { live, shown, spans } = await finishReasons([], {
        GEMINI_API_KEY: "k",
        GEMINI_BASE_URL: gemini.url,
      });
      expect(live).toEqual([
        ["perception", ["MAX_TOKENS"]],
        ["perception", ["STOP"]],
        ["decision", ["STOP"]],
        ["perception", ["STOP"]],
      ]);
      expect(script.unconsumed()).toEqual({});
      // The cut-off call failed, and says why the model stopped beside its error.
      const cut = spans.find(
        (s) => s.attributes["gen_ai.response.finish_reasons"]?.toString() === "MAX_TOKENS",
      )!;
      expect(cut.attributes["error.type"]).toBe("MODEL_TRUNCATED");
      expect(shown).toMatch(/model perception gemini\/gemini-flash-latest .* finish MAX_TOKENS/);
      expect(shown).toMatch(/model decision gemini\/gemini-flash-latest .* finish STOP/);
    } finally {
      await gemini.close();
    }
  });

  it("chat spans carry the provider's finish reason: the real OpenAI client, live, stored and exported", async () => {
    const roles: Record<string, string> = { PerceptionSnapshot: "perception", DecisionOutput: "decision" };
    let perceptions = 0;
    const openai = await startFakeOpenAI({
      handler: (req) =>
        roles[req.body.response_format?.json_schema?.name ?? ""] === "decision"
          ? { json: step("return await add(2, 3);", "add"), finishReason: "stop" }
          : ++perceptions === 1
            ? { text: '{"entities": [', finishReason: "length" }
            : { json: snap(perceptions > 2, "5"), finishReason: "stop" },
    });
    try {
      const { live, shown } = await finishReasons(["--model", "openai:m"], { OPENAI_BASE_URL: openai.url });
      expect(live).toEqual([
        ["perception", ["length"]],
        ["perception", ["stop"]],
        ["decision", ["stop"]],
        ["perception", ["stop"]],
      ]);
      expect(shown).toMatch(/model perception openai\/m .* finish length/);
    } finally {
      await openai.close();
    }
  });

  it("content is captured only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, redacted like the store", async () => {
    const query = "What is 2+3? (db password=hunter2hunter2)";
    const r = await cli.pda(
      ["run", "--model", plainScript(), query],
      undefined,
      otelEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" }),
    );
    expect(r.code).toBe(0);
    await rx.until(() => named(rx.spans, "invoke_agent pda").length === 1, "session span");
    const all = JSON.stringify(rx.spans);
    expect(all).not.toContain("hunter2hunter2");
    const session = one(rx.spans, "invoke_agent pda");
    const input = JSON.parse(session.attributes["gen_ai.input.messages"] as string) as Array<{
      role: string;
      parts: Array<{ type: string; content: string }>;
    }>;
    expect(input[0]!.role).toBe("user");
    expect(input[0]!.parts[0]!.content).toMatch(/^What is 2\+3\? \(db password=\[REDACTED:[^\]]+\]\)$/);
    const chat = rx.spans.find(
      (s) => s.name.startsWith("chat ") && s.attributes["pda.model.role"] === "decision",
    )!;
    expect(chat.attributes["gen_ai.input.messages"]).toContain("[REDACTED:");
    expect(chat.attributes["gen_ai.output.messages"]).toContain("add(2, 3)");
    expect(one(rx.spans, "pda.step CODE").attributes["pda.step.code"]).toBe("return await add(2, 3);");
  });

  it("pda batch --judge: the run is the parent span of its sessions, each judge's chat span live under its session; pda export --otel --batch sends it again", async () => {
    const input = join(cli.dir, "queries.csv");
    writeFileSync(input, "Query,Expected\nWhat is 2+3?,5\nAnd 2+3 again?,5\n");
    const out = join(cli.dir, "batch-out");
    // The real Gemini client (priced in models.yaml) for every role; the judge's requests are the "other" ones.
    const script = scriptedGeminiHandler({
      perception: [1, 2].flatMap(() => [{ json: snap(false) }, { json: snap(true, "5") }]),
      decision: [1, 2].map(() => ({ json: step("return await add(2, 3);", "add") })),
      other: [1, 2].map(() => ({
        json: { correct: true, reason: "5 is 2+3" },
        usage: { input: 120, output: 30 },
      })),
    });
    const gemini = await startFakeGemini({ handler: script.handler });
    let r;
    try {
      r = await cli.pda(
        ["batch", input, "--out", out, "--concurrency", "1", "--judge"],
        undefined,
        otelEnv({ GEMINI_API_KEY: "k", GEMINI_BASE_URL: gemini.url }),
      );
    } finally {
      await gemini.close();
    }
    expect(r.code, r.stderr).toBe(0);
    expect(script.unconsumed()).toEqual({});
    await rx.until(() => named(rx.spans, "pda.batch").length === 1, "batch span");
    const batch = one(rx.spans, "pda.batch");
    expect(batch.parentSpanId).toBeUndefined();
    const runId = batch.attributes["pda.batch.run_id"] as string;
    // Batch sessions run as the agent "batch".
    const sessions = named(rx.spans, "invoke_agent batch");
    expect(sessions).toHaveLength(2);
    for (const s of sessions) expect(s.parentSpanId).toBe(batch.spanId);
    expect(named(rx.spans, "execute_tool add")).toHaveLength(2);
    // The judge's model call, sent as it happened (not only by export): a chat span under the session it judged.
    const judges = rx.spans.filter((s) => s.attributes["pda.model.role"] === "judge");
    expect(judges).toHaveLength(2);
    const spans = byId(rx.spans);
    for (const j of judges) {
      const session = spans.get(j.parentSpanId!)!;
      expect(session.name).toBe("invoke_agent batch");
      expect(j.attributes["gen_ai.conversation.id"]).toBe(session.attributes["gen_ai.conversation.id"]);
      expect(j.name).toBe("chat gemini-flash-latest");
      expect(j.kind).toBe(3); // CLIENT
      expect(j.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "gemini",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.response.finish_reasons": ["STOP"],
        // models.yaml: $0.5 in and $3 out per million tokens.
        "pda.usage.cost_usd": expect.closeTo((120 * 0.5 + 30 * 3) / 1e6, 12),
      });
      expect(j.start).toBeGreaterThanOrEqual(session.start);
    }

    rx.reset();
    const e = await cli.pda(["export", "--otel", "--batch", runId], undefined, otelEnv());
    expect(e.code, e.stderr).toBe(0);
    expect(e.stderr).toContain(`2 sessions of batch run ${runId} sent over OTLP`);
    await rx.until(() => named(rx.spans, "pda.batch").length === 1, "exported batch span");
    const again = one(rx.spans, "pda.batch");
    const db = new Database(join(cli.dir, "pda.db"), { readonly: true });
    try {
      const row = db.prepare("SELECT started_at FROM batch_runs WHERE id = ?").get(runId) as {
        started_at: string;
      };
      expect(again.start).toBe(Date.parse(row.started_at));
    } finally {
      db.close();
    }
    const exported = named(rx.spans, "invoke_agent batch");
    expect(exported).toHaveLength(2);
    for (const s of exported) expect(s.parentSpanId).toBe(again.spanId);
    const exportedJudges = rx.spans.filter((s) => s.attributes["pda.model.role"] === "judge");
    expect(exportedJudges.map((j) => byId(rx.spans).get(j.parentSpanId!)?.name)).toEqual([
      "invoke_agent batch",
      "invoke_agent batch",
    ]);
  });

  it("the default protocol is http/protobuf: the team session, decoded with the official OTLP definitions, checks out as over http/json", async () => {
    const r = await cli.pda(
      ["run", "--profile", "team", "--model", teamScript(), "2+3 and 6*7?"],
      undefined,
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/^(error|warning)|OpenTelemetry/m);
    await rx.until(() => named(rx.spans, "invoke_agent boss").length === 1, "boss span");
    const traces = rx.raw.filter((q) => q.path === "/v1/traces");
    for (const q of traces) expect(q.contentType).toBe("application/x-protobuf");
    const decoded = [...rx.spans];
    expect(new Set(decoded.map((s) => s.protocol))).toEqual(new Set(["http/protobuf"]));
    checkTeamTrace(decoded, sessionOf(r.stderr));
    await rx.until(() => rx.metrics.includes("gen_ai.client.token.usage"), "token metric over protobuf");

    // The same session from the store, over protobuf: the tree, the model and tool calls' times and
    // attributes as the live protobuf run sent them.
    rx.reset();
    const e = await cli.pda(["export", sessionOf(r.stderr), "--otel"], undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
    });
    expect(e.code, e.stderr).toBe(0);
    await rx.until(() => named(rx.spans, "invoke_agent boss").length === 1, "exported boss span");
    const calls = (spans: ReceivedSpan[]) =>
      spans
        .filter((s) => /^(chat|execute_tool) /.test(s.name))
        .map((s) => ({ name: s.name, start: s.start, end: s.end, attributes: s.attributes }))
        .sort((x, y) => x.start - y.start || x.name.localeCompare(y.name));
    expect(calls(rx.spans)).toEqual(calls(decoded));
  });

  it("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the trace and metrics services get the session, decoded with the official definitions", async () => {
    const r = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.grpcUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/^(error|warning)|OpenTelemetry/m);
    await rx.until(
      () => named(rx.spans, "invoke_agent pda").length === 1,
      "a gRPC export with the session span",
    );
    expect(rx.raw, "nothing over HTTP").toEqual([]);
    expect(new Set(rx.spans.map((s) => s.protocol))).toEqual(new Set(["grpc"]));
    const session = one(rx.spans, "invoke_agent pda");
    expect(session.parentSpanId).toBeUndefined();
    expect(session.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": sessionOf(r.stderr),
      "pda.session.status": "succeeded",
    });
    const step = one(rx.spans, "pda.step CODE");
    expect(step.parentSpanId).toBe(session.spanId);
    const exec = one(rx.spans, "execute_tool add");
    expect(exec.parentSpanId).toBe(step.spanId);
    expect(exec.attributes).toMatchObject({ "gen_ai.tool.name": "add", "pda.tool.server": "math" });
    expect(exec.start).toBeGreaterThanOrEqual(step.start);
    expect(exec.end).toBeLessThanOrEqual(step.end);
    expect(step.start).toBeGreaterThanOrEqual(session.start);
    expect(session.end).toBeGreaterThanOrEqual(step.end);
    expect(rx.spans.filter((s) => s.name.startsWith("chat ")).map((s) => s.parentSpanId)).toContain(
      session.spanId,
    );
    await rx.until(() => rx.metrics.includes("gen_ai.client.token.usage"), "token metric over gRPC");
  });

  it("the standard variables apply: headers, service name, resource attributes, sampler", async () => {
    const r = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=k123,x-team=calc",
      OTEL_SERVICE_NAME: "calculator",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=math",
    });
    expect(r.code, r.stderr).toBe(0);
    await rx.until(() => named(rx.spans, "invoke_agent pda").length === 1, "session span");
    const traces = rx.raw.filter((q) => q.path === "/v1/traces");
    for (const q of traces) expect(q.headers).toMatchObject({ "x-api-key": "k123", "x-team": "calc" });
    expect(one(rx.spans, "invoke_agent pda").resource).toMatchObject({
      "service.name": "calculator",
      "deployment.environment": "test",
      team: "math",
    });

    // A sampler that keeps nothing: the session is the same, no span goes out (metrics still do).
    rx.reset();
    const off = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_TRACES_SAMPLER: "always_off",
    });
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toBe("5\n");
    await rx.until(() => rx.metrics.includes("gen_ai.client.token.usage"), "token metric");
    expect(rx.spans).toEqual([]);
    expect(rx.raw.filter((q) => q.path === "/v1/traces")).toEqual([]);
  });

  /** `pda <args>` as a child with `input` on stdin; its output so far, and its end. */
  function child(args: string[], env: Record<string, string>, input = "") {
    const proc = spawn(process.execPath, [distPath("main.js"), "--config", cli.config, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: cli.dir, NO_COLOR: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (d: Buffer) => (stdout += String(d)));
    proc.stderr.on("data", (d: Buffer) => (stderr += String(d)));
    proc.stdin.end(input);
    const done = new Promise<number | null>((res) => proc.on("close", (code) => res(code)));
    return { proc, done, out: () => ({ stdout, stderr }) };
  }

  it("pda chat traces each question's session", async () => {
    const c = child(
      ["--db", join(cli.dir, "pda.db"), "chat", "--model", plainScript()],
      otelEnv(),
      "What is 2+3?\n/exit\n",
    );
    expect(await c.done, c.out().stderr).toBe(0);
    await rx.until(() => named(rx.spans, "invoke_agent pda").length === 1, "the chat session's span");
    const session = one(rx.spans, "invoke_agent pda");
    expect(session.attributes["pda.session.status"]).toBe("succeeded");
    expect(one(rx.spans, "execute_tool add").traceId).toBe(session.traceId);
  });

  it("pda worker traces the sessions it runs for pda batch --queue", async () => {
    const redis = await startRedis();
    const worker = child(
      ["--db", join(cli.dir, "worker.db"), "worker", "--queue", redis.url, "--name", "w1"],
      otelEnv(),
    );
    try {
      await rx.until(
        () => /waiting for jobs/.test(worker.out().stderr) || worker.proc.exitCode !== null,
        "the worker to wait for jobs",
      );
      expect(worker.out().stderr).toMatch(/waiting for jobs/);
      const input = join(cli.dir, "queue.csv");
      writeFileSync(input, "Query,Expected\nWhat is 2+3?,5\n");
      const r = await cli.pda([
        "batch",
        input,
        "--out",
        join(cli.dir, "queue-out"),
        "--queue",
        redis.url,
        "--model",
        plainScript(),
      ]);
      expect(r.code, r.stderr).toBe(0);
      // Spans leave with the batch processor's next round, or when the worker stops.
      worker.proc.kill("SIGTERM");
      expect(await worker.done).toBe(0);
      await rx.until(() => named(rx.spans, "invoke_agent batch").length === 1, "the worker's session span");
      const session = one(rx.spans, "invoke_agent batch");
      expect(session.attributes["pda.session.status"]).toBe("succeeded");
      const step = one(rx.spans, "pda.step CODE");
      expect(step.parentSpanId).toBe(session.spanId);
      expect(one(rx.spans, "execute_tool add").parentSpanId).toBe(step.spanId);
    } finally {
      worker.proc.kill("SIGKILL");
      await redis.stop();
    }
  });

  it("a dead collector changes nothing in the session and costs one warning", async () => {
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close(); // nothing listens there now
    const r = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("5\n");
    const warnings = r.stderr.split("\n").filter((l) => l.includes("OpenTelemetry"));
    // Refused connections are retried: the export fails, or the flush at exit is given up on; said once.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/exporting (spans|metrics) failed|did not take the last spans within 3 s/);
  });

  it("a collector answering 503, or never answering, changes nothing in the session and costs at most one warning", async () => {
    for (const faults of [{ status: 503 }, { hang: true }]) {
      const bad = await startReceiver(faults);
      try {
        // --quiet: stderr holds nothing but what OpenTelemetry says.
        const r = await cli.pda(["run", "--quiet", "--model", plainScript(), "What is 2+3?"], undefined, {
          OTEL_EXPORTER_OTLP_ENDPOINT: bad.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        });
        expect(r.code, JSON.stringify(faults)).toBe(0);
        expect(r.stdout).toBe("5\n");
        // It was tried: the spans reached the collector, which failed them.
        expect(bad.raw.some((q) => q.path === "/v1/traces")).toBe(true);
        const warnings = r.stderr.split("\n").filter((l) => l.includes("OpenTelemetry"));
        // Said once: an export that failed, or (503 is retried, a hanging one never answers) the flush at exit
        // given up on.
        expect(warnings, r.stderr).toEqual([
          expect.stringMatching(
            faults.status
              ? /exporting (spans|metrics) failed|did not take the last spans within/
              : /did not take the last spans within/,
          ),
        ]);
        expect(r.stderr.split("\n").filter((l) => l.trim() && !l.includes("OpenTelemetry"))).toEqual([]);
      } finally {
        await bad.close();
      }
    }
  });

  it("a slow collector (it takes the spans and answers long after) changes nothing in the session, does not hold the process at exit, and costs one warning", async () => {
    const slow = await startReceiver({ delayMs: 300_000 });
    try {
      const r = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {
        OTEL_EXPORTER_OTLP_ENDPOINT: slow.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        // The exporter would wait for the answer as long as the collector takes: only the flush limit ends it.
        OTEL_EXPORTER_OTLP_TIMEOUT: "600000",
        OTEL_BSP_EXPORT_TIMEOUT: "600000",
      });
      // The process is gone while the collector still holds the spans it took, unanswered.
      expect(slow.raw.some((q) => q.path === "/v1/traces")).toBe(true);
      expect(slow.holding()).toBeGreaterThan(0);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe("5"); // the answer alone on stdout
      const db = new Database(join(cli.dir, "pda.db"), { readonly: true });
      try {
        const row = db
          .prepare("SELECT status, final_answer, finished_at FROM sessions WHERE id = ?")
          .get(sessionOf(r.stderr)) as Record<string, unknown>;
        expect(row).toMatchObject({
          status: "succeeded",
          final_answer: "5",
          finished_at: expect.any(String),
        });
      } finally {
        db.close();
      }
      const warnings = r.stderr.split("\n").filter((l) => l.includes("OpenTelemetry"));
      expect(warnings, r.stderr).toEqual([expect.stringMatching(/did not take the last spans within 3 s/)]);
      // The rest of stderr is the trace: no other warning or error in it.
      const others = r.stderr.split("\n").filter((l) => !l.includes("OpenTelemetry"));
      expect(others.filter((l) => /^\s*(error|warning|\(node:)/i.test(l))).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it("a human question is a span of its own, from when it was put to when it was answered", async () => {
    const plan = ["Step 0: ask the unit", "Step 1: add"];
    const script = join(cli.dir, "nop.yaml");
    writeFileSync(
      script,
      stringify({
        perception: [snap(false), snap(true, "5")],
        decision: [
          { plan_text: plan, step_index: 0, description: "ask", type: "NOP", question: "Celsius or Kelvin?" },
          {
            plan_text: plan,
            step_index: 1,
            description: "add",
            type: "CODE",
            code: "return await add(2, 3);",
          },
        ],
      }),
    );
    const answers = join(cli.dir, "answers.yaml");
    writeFileSync(answers, stringify({ clarification: ["Kelvin"] }));
    const r = await cli.pda(
      ["--otel", "run", "--model", `scripted:${script}`, "--hil", `scripted:${answers}`, "What is 2+3?"],
      undefined,
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${rx.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
    );
    expect(r.code, r.stderr).toBe(0);
    await rx.until(() => named(rx.spans, "invoke_agent pda").length === 1, "session span");
    const human = one(rx.spans, "pda.human clarification");
    expect(human.attributes).toMatchObject({
      "pda.human.kind": "clarification",
      "pda.human.answered_by": "scripted",
    });
    expect(human.attributes["pda.human.answer"]).toBeUndefined();
    const parent = byId(rx.spans).get(human.parentSpanId!)!;
    expect(parent.name).toBe("pda.step NOP");
    expect(human.end).toBeGreaterThanOrEqual(human.start);
  });

  it("a run without OTel never loads the OpenTelemetry SDK; a run with it (a variable, or the profile's otel: true) does", async () => {
    // Counted at exit from the module cache (the SDK packages are CommonJS, so they land there when imported).
    const probe = join(cli.dir, "probe.cjs");
    writeFileSync(
      probe,
      `process.on("exit", () => process.stderr.write("otel modules: " + Object.keys(require.cache).filter((k) => k.includes("@opentelemetry")).length + "\\n"));`,
    );
    const count = (stderr: string) => Number(/otel modules: (\d+)/.exec(stderr)![1]);
    const env = { NODE_OPTIONS: `--require ${probe}` };
    expect(count((await cli.pda(["--version"], undefined, env)).stderr)).toBe(0);
    const without = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, env);
    expect(without.code).toBe(0);
    expect(count(without.stderr)).toBe(0);
    const withOtel = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {
      ...env,
      ...otelEnv(),
    });
    expect(withOtel.code).toBe(0);
    expect(count(withOtel.stderr)).toBeGreaterThan(0);
    // No variable, but the profile's otel: true (it sends to the default localhost:4318).
    const byProfile = await cli.pda(
      ["run", "--profile", "traced", "--model", plainScript(), "What is 2+3?"],
      undefined,
      env,
    );
    expect(byProfile.code).toBe(0);
    expect(count(byProfile.stderr)).toBeGreaterThan(0);
  });

  it("Ctrl-C: the session ends aborted and its spans are flushed before the process exits", async () => {
    const config = join(cli.dir, "faulty-config");
    mkdirSync(config, { recursive: true });
    writeFileSync(
      join(config, "mcp_server_config.yaml"),
      stringify({
        servers: [
          {
            id: "faulty",
            command: process.execPath,
            args: [distPath("mcp_servers/testing/fault_server.js")],
          },
        ],
      }),
    );
    const script = join(cli.dir, "slow.yaml");
    writeFileSync(
      script,
      stringify({
        perception: [snap(false)],
        decision: [step("return await slow({ms: 120000, steps: 60});", "wait")],
      }),
    );
    const child = spawn(
      process.execPath,
      [
        distPath("main.js"),
        "--config",
        config,
        "--db",
        join(cli.dir, "pda.db"),
        "run",
        "--model",
        `scripted:${script}`,
        "wait",
      ],
      {
        env: { PATH: process.env.PATH ?? "", HOME: cli.dir, NO_COLOR: "1", ...otelEnv() },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let trace = "";
    child.stderr.on("data", (d: Buffer) => (trace += d.toString()));
    const exited = new Promise<number | null>((res) => child.on("close", (code) => res(code)));
    try {
      await rx.until(() => /slow/.test(trace) && /step 1 of 60/.test(trace), "the slow tool under way");
      child.kill("SIGINT");
      expect(await exited).not.toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    // Everything was sent before exit: nothing arrives later.
    const session = one(rx.spans, "invoke_agent pda");
    expect(session.attributes["pda.session.status"]).toBe("aborted");
    expect(session.status.code).toBe(2); // ERROR
    expect(named(rx.spans, "execute_tool slow")).toHaveLength(1);
  });

  it("no OTel variable, flag or profile: nothing is sent", async () => {
    const r = await cli.pda(["run", "--model", plainScript(), "What is 2+3?"], undefined, {});
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/^(error|warning)|OpenTelemetry/m);
    expect(rx.raw).toHaveLength(0);
  });
});
