/**
 * The request rules the Messages API documentation publishes, as a check the fake server applies with the
 * message the API answers a 400 with, so a request pda builds wrongly fails in tests as it would in
 * production: max_tokens is required; a thinking budget is at least 1024 and under max_tokens; thinking cannot
 * be combined with a forced tool; the adaptive generation (Claude 5, Opus 4.7+, Mythos) takes adaptive thinking
 * only and no sampling parameters; structured outputs exist from Claude 4.5 on and need
 * `additionalProperties: false` on every object, without string, number or array-size constraints.
 * The documented cases are in testing/fixtures/anthropic/.
 */
type Json = Record<string, unknown>;

/** Models that take adaptive thinking only and reject temperature, top_p and top_k. */
const ADAPTIVE_ONLY = /^claude-(opus-4-[78]|(opus|sonnet|haiku|fable|mythos)-5|mythos-preview)/;
/** Models without structured outputs (output_config.format). */
const NO_STRUCTURED = /^claude-(3|(opus|sonnet)-4-0|(opus|sonnet)-4-20|opus-4-1|instant|2)/;
/** Schema keywords structured outputs do not support (the SDK moves them into descriptions). */
const UNSUPPORTED = [
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "maxItems",
  "uniqueItems",
];

/** The 400 message the API would give, or undefined when the body follows the rules. */
export function anthropicRequestProblem(body: Json): string | undefined {
  const model = String(body.model ?? "");
  if (!model) return "model: Field required";
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return "messages: at least one message is required";
  if ((messages[0] as Json).role !== "user") return 'messages: first message must use the "user" role';
  const blocks = messages.map((m) => (m as Json).content);
  for (const [i, content] of blocks.entries()) {
    const problem = contentProblem(content, `messages.${i}.content`);
    if (problem) return problem;
  }
  const thinking = body.thinking as { type?: string; budget_tokens?: number } | undefined;
  const thinks = thinking?.type === "enabled" || thinking?.type === "adaptive";
  if (thinking?.type === "enabled") {
    if (ADAPTIVE_ONLY.test(model)) {
      return (
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and ' +
        '"output_config.effort" to control thinking behavior.'
      );
    }
    const budget = thinking.budget_tokens ?? 0;
    if (budget < 1024) return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";
    if (body.max_tokens <= budget) return "`max_tokens` must be greater than `thinking.budget_tokens`";
  }
  for (const p of ["temperature", "top_p", "top_k"]) {
    if (!(p in body)) continue;
    if (ADAPTIVE_ONLY.test(model)) return `\`${p}\` is deprecated for this model.`;
    if (thinks && p === "temperature" && body[p] !== 1) {
      return "`temperature` may only be set to 1 when thinking is enabled.";
    }
  }
  const choice = body.tool_choice as { type?: string; name?: string } | undefined;
  const tools = (body.tools as Array<{ name?: string; input_schema?: Json }> | undefined) ?? [];
  if (choice && (choice.type === "tool" || choice.type === "any") && thinks) {
    return "Thinking may not be enabled when tool_choice forces tool use.";
  }
  for (const t of tools) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(t.name ?? ""))
      return `tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    if (t.input_schema?.type !== "object") return "tools.0.input_schema.type: Input should be 'object'";
  }
  if (choice?.type === "tool" && !tools.some((t) => t.name === choice.name)) {
    return `Tool '${choice.name}' not found in provided tools`;
  }
  const format = (body.output_config as { format?: { type?: string; schema?: Json } } | undefined)?.format;
  if (format) {
    if (NO_STRUCTURED.test(model))
      return "output_config.format: structured outputs are not supported on this model";
    if (format.type !== "json_schema") return "output_config.format.type: Input should be 'json_schema'";
    return schemaProblem(format.schema ?? {});
  }
  return undefined;
}

function schemaProblem(s: Json): string | undefined {
  const bad = (why: string) => `output_config.format.schema: ${why}`;
  for (const k of UNSUPPORTED) if (k in s) return bad(`'${k}' is not supported`);
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.includes("object") && s.additionalProperties !== false) {
    return bad("For 'object' type, 'additionalProperties' must be explicitly set to false");
  }
  if (typeof s.minItems === "number" && s.minItems > 1)
    return bad("'minItems' values other than 0 or 1 are not supported");
  const children: unknown[] = [
    ...Object.values((s.properties as Json | undefined) ?? {}),
    ...Object.values((s.$defs as Json | undefined) ?? {}),
    ...((s.anyOf as unknown[] | undefined) ?? []),
    ...((s.allOf as unknown[] | undefined) ?? []),
    ...(s.items && typeof s.items === "object" ? [s.items] : []),
  ];
  for (const c of children) {
    const p = c && typeof c === "object" ? schemaProblem(c as Json) : undefined;
    if (p) return p;
  }
  return undefined;
}

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/** A message's content: a string, or blocks where each image is base64 of a type the API takes. */
function contentProblem(content: unknown, at: string): string | undefined {
  if (typeof content === "string")
    return content ? undefined : `${at}: text content blocks must be non-empty`;
  if (!Array.isArray(content)) return `${at}: Input should be a valid list`;
  for (const [j, b] of (content as Json[]).entries()) {
    if (b.type === "text" && !b.text) return `${at}.${j}.text: text content blocks must be non-empty`;
    if (b.type !== "image") continue;
    const source = b.source as Json | undefined;
    if (source?.type !== "base64") return `${at}.${j}.source.type: Input should be 'base64', 'url' or 'file'`;
    if (!IMAGE_TYPES.includes(String(source.media_type)))
      return `${at}.${j}.source.base64.media_type: Input should be ${IMAGE_TYPES.map((t) => `'${t}'`).join(", ")}`;
    if (!source.data) return `${at}.${j}.source.base64.data: image data must not be empty`;
  }
  return undefined;
}
