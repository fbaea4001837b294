import { Chalk } from "chalk";
import { describe, expect, it } from "vitest";
import {
  Answer,
  Question,
  STOP_STATUS,
  checkAnswer,
  parseGivenValue,
  renderCode,
  renderQuestion,
  toElicitResult,
  toHumanInput,
  type ElicitationAnswer,
} from "./index.js";
import { SAMPLE_QUESTIONS } from "./samples.js";

const plain = new Chalk({ level: 0 });
const at = "2026-01-02T03:04:05.000Z";

describe("questions and answers", () => {
  it("a question survives JSON, so a paused session can ask it again after a restart", () => {
    for (const q of Object.values(SAMPLE_QUESTIONS)) {
      expect(Question.parse(JSON.parse(JSON.stringify(q)))).toEqual(q);
    }
  });

  it("rejects a question with a field of the wrong type, naming the field", () => {
    const r = Question.safeParse({ ...SAMPLE_QUESTIONS.tool_failure, step_index: "one" });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(["step_index"]);
    expect(Question.safeParse({ kind: "survey" }).success).toBe(false);
  });

  it("tool_failure answers carry what each choice needs", () => {
    const base = { kind: "tool_failure", answered_by: "terminal", at };
    expect(Answer.safeParse({ ...base, choice: "edit_code", code: "return 1" }).success).toBe(true);
    expect(Answer.safeParse({ ...base, choice: "edit_code" }).success).toBe(false);
    expect(Answer.safeParse({ ...base, choice: "abort" }).success).toBe(false); // abort is a StopAnswer
    expect(Answer.safeParse({ ...base, choice: "skip", answered_by: "someone" }).success).toBe(false);
    expect(Answer.safeParse({ ...base, choice: "skip", answered_by: "policy:skip" }).success).toBe(true);
  });

  it("checkAnswer refuses an answer of another kind, and a stop for an elicitation", () => {
    const approval = { kind: "approval", choice: "deny", answered_by: "scripted", at };
    expect(checkAnswer(SAMPLE_QUESTIONS.approval, approval)).toMatchObject({ choice: "deny" });
    expect(() => checkAnswer(SAMPLE_QUESTIONS.clarification, approval)).toThrow(
      /clarification question got a approval/,
    );
    const stop = {
      kind: "stop",
      question_kind: "elicitation",
      outcome: "defer",
      reason: "r",
      answered_by: "scripted",
      at,
    };
    expect(() => checkAnswer(SAMPLE_QUESTIONS.elicitation, stop)).toThrow(/elicitation question got a stop/);
  });

  it("a given value is JSON when it parses, else the text", () => {
    expect(parseGivenValue("31")).toBe(31);
    expect(parseGivenValue(' {"a": [1, 2]} ')).toEqual({ a: [1, 2] });
    expect(parseGivenValue('"31"')).toBe("31");
    expect(parseGivenValue("true")).toBe(true);
    expect(parseGivenValue("Paris, France")).toBe("Paris, France");
    expect(parseGivenValue("{not json")).toBe("{not json");
  });

  it("toHumanInput is the log record kept beside the original query", () => {
    const q = SAMPLE_QUESTIONS.tool_failure;
    const a = checkAnswer(q, {
      kind: "tool_failure",
      choice: "give_result",
      value: 31,
      answered_by: "terminal",
      at,
    });
    expect(toHumanInput(q, a)).toEqual({
      kind: "tool_failure",
      question:
        "step 1 (Add the two numbers from the sheet) failed: TOOL_ERROR in sheet.read: sheet is locked by another user",
      answer: "give_result: 31",
      answered_by: "terminal",
      at,
      step_index: 1,
    });
  });

  it("stop outcomes map to session statuses, and elicitation answers to MCP results", () => {
    expect(STOP_STATUS).toEqual({ abort: "aborted", fail: "failed", defer: "awaiting_human" });
    const a: ElicitationAnswer = {
      kind: "elicitation",
      action: "accept",
      content: { n: 1 },
      answered_by: "scripted",
      at,
    };
    expect(toElicitResult(a)).toEqual({ action: "accept", content: { n: 1 } });
    expect(toElicitResult({ kind: "elicitation", action: "decline", answered_by: "scripted", at })).toEqual({
      action: "decline",
    });
  });
});

describe("rendering", () => {
  it("shows code with line numbers, marks the error line, and names the error", () => {
    const text = renderQuestion(SAMPLE_QUESTIONS.tool_failure, { chalk: plain, width: 60 });
    expect(text).toContain("── A step failed");
    expect(text).toContain("Step 1: Add the two numbers from the sheet (3 attempt(s) made)");
    expect(text).toContain('  1 │ const a = await sheet.read({ cell: "A1" });');
    expect(text).toContain('> 2 │ const b = await sheet.read({ cell: "B1" });');
    expect(text).toContain("✖ TOOL_ERROR in sheet.read (line 2): sheet is locked by another user");
  });

  it("cuts long code with a count of what was left out", () => {
    const code = Array.from({ length: 12 }, (_, i) => `line${i + 1}`).join("\n");
    const text = renderCode(code, { maxLines: 10, chalk: plain });
    expect(text.split("\n")).toHaveLength(11);
    expect(text).toContain("10 │ line10");
    expect(text).toContain("… 2 more line(s)");
  });

  it("shows an approval's tool and arguments, and a clarification's task", () => {
    const approval = renderQuestion(SAMPLE_QUESTIONS.approval, { chalk: plain });
    expect(approval).toContain("filesystem.write_file");
    expect(approval).toContain('"path": "/tmp/report.md"');
    const clar = renderQuestion(SAMPLE_QUESTIONS.clarification, { chalk: plain });
    expect(clar).toContain("Task: What will the weather be in Paris tomorrow?");
    expect(clar).toContain("? Which Paris do you mean");
  });
});
