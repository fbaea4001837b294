/**
 * Servers' `sampling/createMessage` requests (a tool asking pda's model for a completion mid-call) are answered
 * by the session's model under the role "sampling" (models.yaml `roles.sampling`), after the person approves
 * as the server's `sampling` setting says (`ask` through --hil by default, `allow` for unattended runs, `deny`).
 * Each answer is a model call of the session that ran the tool: checked against its budgets first, its tokens
 * and cost added to the session, and logged as an llm_calls row with role "sampling". Outside a session
 * (`pda call`, `pda exec`) the same model answers under the same approval rule, charged to no session.
 */
import { z } from "zod";
import type { CreateMessageRequest, CreateMessageResult } from "@modelcontextprotocol/client";
import { SpendLedger, chargeUsage, type SpendAccount } from "../agent/index.js";
import { errorMessage, systemClock, type ModelProvider, type SessionRecorder } from "../core/index.js";
import { askOrDefer, type Answer, type ApprovalQuestion, type HumanChannel } from "../hil/index.js";
import { dirname } from "node:path";
import { configDir, configFile } from "../config/index.js";
import { ModelOutputError, createModels, loadModelsConfig, type ModelRouter } from "../llm/index.js";
import { SAMPLING_REJECTED, type MultiMCP, type SamplingHandler } from "../mcp_servers/index.js";
import { ProtocolError } from "@modelcontextprotocol/client";

export const SAMPLING_ROLE = "sampling";

/** The reply asked of the model: the completion's text (the model edge speaks schemas, not free text). */
const SamplingReply = z.object({ text: z.string() });

/** A ledger that also knows each session's live account, so a sampling call can be charged to its session. */
export class SamplingLedger extends SpendLedger {
  private readonly live = new Map<string, SpendAccount>();

  override open(...args: Parameters<SpendLedger["open"]>): SpendAccount {
    const account = super.open(...args);
    this.live.set(account.session.session_id, account);
    return account;
  }

  override close(account: SpendAccount): void {
    super.close(account);
    if (this.live.get(account.session.session_id) === account) this.live.delete(account.session.session_id);
  }

  /**
   * The session a tool call now under way belongs to: the one running, or the innermost of a chain of callers
   * and sub-agents. Undefined when none runs, or several run side by side (a batch): the call cannot be told apart.
   */
  active(): SpendAccount | undefined {
    const running = [...this.live.values()];
    const callers = new Set(running.map((a) => a.parent));
    const leaves = running.filter((a) => !callers.has(a));
    return leaves.length === 1 ? leaves[0] : undefined;
  }
}

export interface SamplingDeps {
  human: HumanChannel;
  /**
   * The provider that routes by role (models.yaml `roles.sampling`, else the default model), or a function
   * making it on the first request (a command that never samples needs no model key).
   */
  model: ModelProvider | (() => ModelProvider);
  /** The sessions a request is charged to; none outside a session (`pda call`, `pda exec`). */
  ledger?: SamplingLedger;
  recorder?: Pick<SessionRecorder, "recordLlmCall" | "recordHumanInput">;
  /** A question and its answer, for the session's human inputs. */
  onAnswer?: (sessionId: string, question: ApprovalQuestion, answer: Answer) => void;
}

const refuse = (message: string) => new ProtocolError(SAMPLING_REJECTED, message);

export function answerSampling(hub: MultiMCP, deps: SamplingDeps): void {
  hub.setSamplingHandler(samplingHandler(deps));
}

export function samplingHandler(deps: SamplingDeps): SamplingHandler {
  // Servers the person allowed for the rest of this process (allow_always).
  const allowed = new Set<string>();
  return async (server, request, { policy, signal }) => {
    const account = deps.ledger?.active();
    if (deps.ledger && !account)
      throw refuse("sampling needs the one session that called the tool, and none (or several) is running");
    const stop = account?.stop();
    if (stop) throw refuse(`sampling refused: the session ${stop.message}`);
    if (policy === "ask" && !allowed.has(server)) {
      const question: ApprovalQuestion = {
        kind: "approval",
        tool: "sampling/createMessage",
        server,
        args: approvalArgs(request),
      };
      const answer = await askOrDefer(deps.human, question);
      if (account) deps.onAnswer?.(account.session.session_id, question, answer);
      if (answer.kind === "stop")
        throw refuse(
          `sampling not approved: ${answer.reason}; server "${server}" has sampling: ask (set sampling: allow ` +
            `for it in the hub config to let it sample unattended)`,
        );
      if (answer.choice === "deny") throw refuse("sampling not approved: the person denied it");
      if (answer.choice === "allow_always") allowed.add(server);
    }
    return sample(deps, account, server, request, signal);
  };
}

/** What the person is shown: who asks, the system prompt, the messages as text, the token limit. */
function approvalArgs(request: CreateMessageRequest["params"]): Record<string, unknown> {
  return {
    ...(request.systemPrompt && { system: request.systemPrompt }),
    messages: request.messages.map((m) => `${m.role}: ${messageText(m.content)}`),
    max_tokens: request.maxTokens,
  };
}

type Content = CreateMessageRequest["params"]["messages"][number]["content"];

function messageText(content: Content): string {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks
    .map((b) => (b.type === "text" ? b.text : `[${b.type}${"mimeType" in b ? ` ${b.mimeType}` : ""}]`))
    .join("\n");
}

function prompts(server: string, request: CreateMessageRequest["params"]) {
  const system = [
    `The MCP server "${server}" asks for a completion of the conversation below, for one of its tools.`,
    request.systemPrompt ?? "",
    `Reply with the next assistant message as "text", within about ${request.maxTokens} tokens.`,
  ]
    .filter(Boolean)
    .join("\n");
  const prompt = request.messages.map((m) => `${m.role}:\n${messageText(m.content)}`).join("\n\n");
  // Pictures in the messages go along as image parts (a model that takes none sees the [image] placeholder).
  const images = request.messages
    .flatMap((m) => (Array.isArray(m.content) ? m.content : [m.content]))
    .flatMap((b) => (b.type === "image" ? [{ mimeType: b.mimeType, data: b.data }] : []));
  return { system, prompt, images };
}

async function sample(
  deps: SamplingDeps,
  account: SpendAccount | undefined,
  server: string,
  request: CreateMessageRequest["params"],
  signal: AbortSignal,
): Promise<CreateMessageResult> {
  const s = account?.session;
  const { system, prompt, images } = prompts(server, request);
  const startedAt = systemClock.iso();
  const t0 = systemClock.now();
  const done = account?.begin();
  let model: ModelProvider | undefined;
  try {
    model = typeof deps.model === "function" ? deps.model() : deps.model;
    const result = await model.generate({
      role: SAMPLING_ROLE,
      system,
      prompt,
      schema: SamplingReply,
      schemaName: "SamplingReply",
      ...(images.length && { images }),
      signal,
    });
    if (s) {
      chargeUsage(s, result.attempts, result.usage, result.cost_usd);
      deps.recorder?.recordLlmCall(s.session_id, {
        role: SAMPLING_ROLE,
        provider: result.provider,
        model: result.model,
        ok: true,
        input_tokens: result.usage.input_tokens,
        output_tokens: result.usage.output_tokens,
        latency_ms: result.latency_ms,
        attempts: result.attempts,
        cost_usd: result.cost_usd,
        prompt: `${system}\n${prompt}`,
        raw_response: result.raw,
        value: result.value,
        started_at: startedAt,
      });
    }
    return {
      role: "assistant",
      content: { type: "text", text: result.value.text },
      model: result.model,
      stopReason: "endTurn",
    };
  } catch (e) {
    // A reply that stayed invalid was still paid for, as in the loop's own calls.
    const paid = e instanceof ModelOutputError ? e : undefined;
    const usage = paid?.usage ?? { input_tokens: 0, output_tokens: 0 };
    if (!s || !model) throw refuse(`sampling failed: ${errorMessage(e)}`);
    chargeUsage(s, paid?.attempts ?? 1, usage, paid?.cost_usd);
    deps.recorder?.recordLlmCall(s.session_id, {
      role: SAMPLING_ROLE,
      provider: model.provider,
      model: model.model,
      ok: false,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      latency_ms: systemClock.now() - t0,
      attempts: paid?.attempts ?? 1,
      cost_usd: paid?.cost_usd,
      prompt: `${system}\n${prompt}`,
      raw_response: paid?.raw ?? "",
      error: `${(e as { code?: string }).code ?? "ERROR"}: ${errorMessage(e)}`,
      started_at: startedAt,
    });
    throw refuse(`sampling failed: ${errorMessage(e)}`);
  } finally {
    done?.();
  }
}

/**
 * Sampling for a command that runs no session (`pda call`, `pda exec`): the model `--model` names (else
 * models.yaml's choice; its `sampling` role applies), made on the first request, so a missing key is a
 * refusal the server sees rather than a failed command. `close()` ends the model's client if one was made.
 */
export function attachSampling(
  hub: MultiMCP,
  human: HumanChannel,
  opts: { config?: string; model?: string },
): { close(): Promise<void> } {
  let router: ModelRouter | undefined;
  const model = () =>
    (router ??= createModels({
      model: opts.model,
      config: loadModelsConfig(dirname(configFile(configDir(opts.config), "models.yaml"))),
      roles: [SAMPLING_ROLE],
    }));
  answerSampling(hub, { human, model });
  return { close: async () => router?.close() };
}
