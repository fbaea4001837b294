/** `pda show`: its options, help and action; what it shares with other commands is in ../memory.ts. */
import type { Command } from "commander";
import { renderAgentTree, withSubagentsLine } from "../agent-tree.js";
import { runCommand } from "../context.js";
import { serverNoteLines } from "../trace.js";
import {
  globals,
  out,
  printJson,
  quietOnClosedPipe,
  renderTimeline,
  withStore,
  withTree,
} from "../memory.js";

export function register(program: Command): void {
  program
    .command("show")
    .description(
      "one session's timeline: perceptions, plan versions, steps with code and results, tools, humans",
    )
    .argument("<id>", "session id or an unambiguous prefix of it")
    .option("--json", "print the session as JSON (the AgentSession export)")
    .action((id: string, opts: { json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        quietOnClosedPipe();
        const g = globals(cmd);
        withStore(g, (store) => {
          const session = store.getSession(id);
          if (opts.json) return printJson(session);
          const timeline = renderTimeline(store.timeline(id), g.verbose, withSubagentsLine(session));
          out(withTree(timeline, renderAgentTree(store, id)));
          for (const line of serverNoteLines(store.serverLogs(session.session_id))) out(line);
        });
      }),
    );
}
