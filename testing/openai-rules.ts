/**
 * The request rules api.openai.com publishes for chat completions, as a check the fake server applies: the
 * error message is the one the real API returns, so a request pda builds wrongly fails in tests as it would
 * in production. Reasoning models (gpt-5, o-series) take max_completion_tokens and only the default sampling;
 * strict json_schema needs every property required and additionalProperties false on every object.
 */
const REASONING = /^(gpt-5|o1|o3|o4)/;

/** The 400 message the API would give, or undefined when the body follows the rules. */
export function openAIRequestProblem(body: Record<string, unknown>): string | undefined {
  const model = String(body.model ?? "");
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return "Invalid value for 'messages': expected a non-empty array.";
  }
  const bad = badImage(body.messages as Array<{ content?: unknown }>);
  if (bad) return bad;
  if (REASONING.test(model)) {
    if ("max_tokens" in body) {
      return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
    }
    for (const p of ["temperature", "top_p"]) {
      if (p in body && body[p] !== 1) {
        return `Unsupported value: '${p}' does not support ${String(body[p])} with this model. Only the default (1) value is supported.`;
      }
    }
  }
  const rf = body.response_format as
    { type?: string; json_schema?: { name?: string; strict?: boolean; schema?: unknown } } | undefined;
  if (rf?.type === "json_object") {
    const text = JSON.stringify(body.messages);
    if (!/json/i.test(text)) {
      return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.";
    }
  }
  if (rf?.type === "json_schema") {
    const name = rf.json_schema?.name ?? "";
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) return `Invalid 'response_format.json_schema.name': '${name}'.`;
    if (rf.json_schema?.strict) return strictProblem(name, rf.json_schema.schema, "()");
  }
  return undefined;
}

function strictProblem(name: string, s: unknown, context: string): string | undefined {
  if (!s || typeof s !== "object") return undefined;
  const schema = s as Record<string, unknown>;
  const bad = (why: string) => `Invalid schema for response_format '${name}': In context=${context}, ${why}`;
  for (const k of ["minLength", "maxLength", "default"]) {
    if (k in schema) return bad(`'${k}' is not permitted.`);
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes("object")) {
    if (schema.additionalProperties !== false) {
      return bad("'additionalProperties' is required to be supplied and to be false.");
    }
    const props = Object.keys((schema.properties as Record<string, unknown>) ?? {});
    const required = (schema.required as string[] | undefined) ?? [];
    const missing = props.find((p) => !required.includes(p));
    if (missing) {
      return bad(
        `'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`,
      );
    }
    for (const [k, v] of Object.entries((schema.properties as Record<string, unknown>) ?? {})) {
      const p = strictProblem(
        name,
        v,
        `${context === "()" ? "(" : context.slice(0, -1) + ", "}'properties', '${k}')`,
      );
      if (p) return p;
    }
  }
  if (schema.items) return strictProblem(name, schema.items, `${context.slice(0, -1)}, 'items')`);
  for (const k of ["anyOf", "$defs", "definitions"]) {
    const v = schema[k];
    const list = Array.isArray(v) ? v : v && typeof v === "object" ? Object.values(v) : [];
    for (const b of list) {
      const p = strictProblem(name, b, context);
      if (p) return p;
    }
  }
  return undefined;
}

/** An image_url part must hold an https: URL or a base64 data URL of an image. */
function badImage(messages: Array<{ content?: unknown }>): string | undefined {
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const [j, part] of (
      m.content as Array<{ type?: string; image_url?: { url?: unknown } }>
    ).entries()) {
      if (part.type !== "image_url") continue;
      const url = String(part.image_url?.url ?? "");
      if (!/^(https?:\/\/|data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/]+=*$)/.test(url))
        return `Invalid 'messages[${i}].content[${j}].image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value that is not.`;
    }
  }
  return undefined;
}
