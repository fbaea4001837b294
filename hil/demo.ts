/**
 * Ask sample questions through a channel and print each answer as one JSON line — for the tmux tests and
 * for trying a channel by hand:
 *
 *   node dist/hil/demo.js [--hil SPEC] [--timeout-ms N] [--on-timeout POLICY] [--questions FILE.json] KIND...
 *
 * KIND is tool_failure | clarification | approval | elicitation (built-in samples); --questions asks the
 * questions in a JSON array instead. Prints `ANSWER <json>` per answer; on Ctrl-C `CANCELLED <json>` and
 * exit 130; a bad spec exits 2 with the message on stderr.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import { ConfigError, isPdaError, errorMessage } from "../core/index.js";
import { SAMPLE_QUESTIONS } from "./samples.js";
import {
  createChannel,
  isHumanCancelled,
  PolicyName,
  Question,
  QuestionKind,
  ScriptedChannel,
  type TerminalOptions,
} from "./index.js";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      hil: { type: "string" },
      "timeout-ms": { type: "string" },
      "on-timeout": { type: "string" },
      questions: { type: "string" },
    },
  });
  const terminal: TerminalOptions = {};
  if (values["timeout-ms"] !== undefined) terminal.timeoutMs = Number(values["timeout-ms"]);
  if (values["on-timeout"] !== undefined) {
    const p = PolicyName.safeParse(values["on-timeout"]);
    if (!p.success) throw new ConfigError(`--on-timeout: unknown policy "${values["on-timeout"]}"`);
    terminal.onTimeout = p.data;
  }
  const questions = values.questions
    ? z.array(Question).parse(JSON.parse(readFileSync(values.questions, "utf8")))
    : positionals.map((k) => {
        const kind = QuestionKind.safeParse(k);
        if (!kind.success)
          throw new ConfigError(`unknown question kind "${k}" (known: ${QuestionKind.options.join(", ")})`);
        return SAMPLE_QUESTIONS[kind.data];
      });
  if (questions.length === 0) throw new ConfigError("name at least one question kind, or --questions FILE");

  const channel = createChannel(values.hil, {
    isTTY: Boolean(process.stdin.isTTY && process.stdout.isTTY),
    terminal,
  });
  for (const q of questions) {
    try {
      const answer = await channel.ask(q);
      process.stdout.write(`ANSWER ${JSON.stringify(answer)}\n`);
    } catch (e) {
      if (!isHumanCancelled(e)) throw e;
      process.stdout.write(
        `CANCELLED ${JSON.stringify({ code: e.code, reason: e.reason, question_kind: q.kind })}\n`,
      );
      return e.exitCode;
    }
  }
  if (channel instanceof ScriptedChannel)
    process.stdout.write(`UNCONSUMED ${JSON.stringify(channel.unconsumed())}\n`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`error ${isPdaError(e) ? `${e.code}: ` : ""}${errorMessage(e)}\n`);
    process.exitCode = isPdaError(e) ? e.exitCode : 1;
  },
);
