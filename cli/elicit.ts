/**
 * Servers' elicitation requests (a form a tool asks for mid-call) go to the human channel of the command, as
 * `--hil` names it: a person at the terminal, a scripted file, or a policy. The same in run, chat, batch,
 * call and exec.
 */
import { askOrDefer, toElicitResult, type Answer, type HumanChannel } from "../hil/index.js";
import type { MultiMCP } from "../mcp_servers/index.js";

export function answerElicitations(
  hub: MultiMCP,
  human: HumanChannel,
  onAnswer?: (question: Parameters<typeof askOrDefer>[1], answer: Answer) => void,
): void {
  hub.setElicitationHandler(async (server, request) => {
    const question = {
      kind: "elicitation" as const,
      server,
      message: request.message,
      requestedSchema:
        "requestedSchema" in request ? request.requestedSchema : { type: "object" as const, properties: {} },
    };
    const answer = await askOrDefer(human, question);
    onAnswer?.(question, answer);
    return toElicitResult(answer);
  });
}
