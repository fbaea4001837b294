import type { z } from "zod";

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface GenerateRequest<T> {
  /** Which part of the loop asks: "perception", "decision", "judge", ... (scripted playback is per role). */
  role: string;
  system: string;
  prompt: string;
  /** The zod schema the value must satisfy; the provider derives the JSON Schema from it. */
  schema: z.ZodType<T>;
  /** A short name for the schema, e.g. "PerceptionSnapshot". */
  schemaName: string;
  signal?: AbortSignal;
}

export interface GenerateResult<T> {
  value: T;
  /** The raw text of the last response. */
  raw: string;
  usage: Usage;
  latency_ms: number;
  /** Model calls made, including the repair round. */
  attempts: number;
  provider: string;
  model: string;
}

/** One model behind one interface: schema in, validated value + usage + latency out. */
export interface ModelProvider {
  readonly provider: string;
  readonly model: string;
  /** Throws ModelError (core/errors) when no valid value can be had. */
  generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>>;
}
