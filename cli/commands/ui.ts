/** `pda ui`: the local web app over the session store; runs until Ctrl-C. */
import { resolve } from "node:path";
import type { Command } from "commander";
import { ConfigError, defaultDbPath } from "../../core/index.js";
import { SessionStore } from "../../memory/index.js";
import { DEFAULT_UI_HOST, DEFAULT_UI_PORT, openBrowser, startUi } from "../../ui/index.js";
import { runCommand } from "../context.js";

interface UiFlags {
  db?: string;
  config?: string;
  port: string;
  host?: string;
  open?: boolean;
  replay?: boolean;
  json?: boolean;
}

function portOption(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new ConfigError(`--port must be a port number from 0 to 65535, got "${value}"`);
  }
  return n;
}

export function register(program: Command) {
  program
    .command("ui")
    .description(
      "a local web app over the session store: sessions (search, filters), one session's timeline, live " +
        "runs, batch runs; prints its address (Ctrl-C stops it)",
    )
    .option("--port <n>", "port to listen on (0: any free port)", String(DEFAULT_UI_PORT))
    .option(
      "--host <address>",
      `address to listen on (default ${DEFAULT_UI_HOST}); any other than loopback requires the token printed at start`,
    )
    .option("--open", "open the address in the default browser")
    .option(
      "--replay",
      "let a session's page start pda replay of it (the replay calls the live tools; off: the UI only reads and answers questions)",
    )
    .option("--json", 'print {"url", "token_required"} as JSON once it listens (errors as JSON too)')
    .action(async (_o, cmd: Command) =>
      runCommand(async () => {
        const flags = cmd.optsWithGlobals() as UiFlags;
        const port = portOption(flags.port);
        const store = SessionStore.open(resolve(flags.db ?? process.env.PDA_DB ?? defaultDbPath()));
        let ui;
        try {
          const config = flags.config ?? process.env.PDA_CONFIG;
          ui = await startUi({
            store,
            port,
            host: flags.host,
            config: config ? resolve(config) : undefined,
            allowReplay: flags.replay === true,
          });
        } catch (e) {
          store.close();
          throw e;
        }
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ url: ui.url, token_required: !!ui.token })}\n`);
        } else {
          process.stdout.write(`pda ui: ${ui.url}\n`);
          if (ui.token) process.stdout.write("(the token in this address is needed by every request)\n");
        }
        if (flags.open) openBrowser(ui.url, (m) => process.stderr.write(`${m}\n`));
        await new Promise<void>((done) => {
          const stop = () => {
            process.off("SIGINT", stop);
            process.off("SIGTERM", stop);
            void ui.close().then(done);
          };
          process.on("SIGINT", stop);
          process.on("SIGTERM", stop);
        });
        store.close();
      }),
    );
}
