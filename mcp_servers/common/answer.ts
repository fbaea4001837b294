import type { CallToolResult } from "@modelcontextprotocol/server";

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * A tool's result: the value as structuredContent (and its JSON as text). Errors of the `expected` classes
 * become isError results carrying their message; anything else is a bug and propagates.
 */
export async function answer<T extends Record<string, unknown>>(
  expected: readonly ErrorClass[],
  compute: () => Promise<T>,
): Promise<CallToolResult> {
  try {
    const value = await compute();
    return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
  } catch (e) {
    if (expected.some((c) => e instanceof c)) {
      return { isError: true, content: [{ type: "text", text: (e as Error).message }] };
    }
    throw e;
  }
}
