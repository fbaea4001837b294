/** One sample question of each kind: for the demo script, the tests and trying a channel by hand. */
import type { Question, QuestionKind } from "./questions.js";

export const SAMPLE_QUESTIONS: Record<QuestionKind, Question> = {
  tool_failure: {
    kind: "tool_failure",
    step_index: 1,
    description: "Add the two numbers from the sheet",
    code: [
      'const a = await sheet.read({ cell: "A1" });',
      'const b = await sheet.read({ cell: "B1" });',
      "return await add({ a, b });",
    ].join("\n"),
    error: { code: "TOOL_ERROR", message: "sheet is locked by another user", tool: "sheet.read", line: 2 },
    attempts: 3,
  },
  clarification: {
    kind: "clarification",
    question: "Which Paris do you mean: Paris, France or Paris, Texas?",
    context: "What will the weather be in Paris tomorrow?",
    step_index: 0,
  },
  approval: {
    kind: "approval",
    server: "filesystem",
    tool: "write_file",
    args: { path: "/tmp/report.md", content: "# Report\n" },
    step_index: 2,
  },
  elicitation: {
    kind: "elicitation",
    server: "booking",
    message: "Who is travelling?",
    requestedSchema: {
      type: "object",
      properties: {
        name: { type: "string", title: "Full name", minLength: 1 },
        email: { type: "string", format: "email", description: "for the ticket" },
        seats: { type: "integer", minimum: 1, maximum: 9, default: 1 },
        class: {
          type: "string",
          oneOf: [
            { const: "economy", title: "Economy" },
            { const: "business", title: "Business" },
          ],
        },
        newsletter: { type: "boolean", title: "Send me offers", default: false },
      },
      required: ["name", "email", "seats"],
    },
  },
  interrupt: { kind: "interrupt", what: "the decision model call", step_index: 1 },
  in_doubt: {
    kind: "in_doubt",
    server: "robot",
    tool: "place",
    args: { x: 0.4, y: 0.1 },
    step_index: 2,
  },
};
