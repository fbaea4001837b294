/** `pda auth login | logout | status`: OAuth logins to remote MCP servers, kept in the user's config folder. */
import { readFileSync } from "node:fs";
import chalk from "chalk";
import { Option, type Command } from "commander";
import { ConfigError } from "../../core/index.js";
import { loadHubConfig } from "../../mcp_servers/hub/index.js";
import {
  AuthError,
  TokenStore,
  browserCommand,
  idTokenClaims,
  login,
  person,
  status,
  type RemoteServer,
} from "../../mcp_servers/hub/auth/index.js";
import { runCommand } from "../context.js";
import { hubConfigFile } from "../hub.js";

const WHERE =
  "Tokens live in the user's config folder, auth/<server>.json (0600), never in the session store. A server " +
  "that asks for a login in the middle of another command gets one there when a person is at a terminal (the " +
  "URL is printed) or PDA_BROWSER names a command that opens URLs; otherwise that command fails naming " +
  "`pda auth login <server>`.";

/** The configured remote server named `id`. */
function remoteServer(cmd: Command, id: string): RemoteServer {
  const { config } = cmd.optsWithGlobals() as { config?: string };
  const file = hubConfigFile(config);
  const server = loadHubConfig(file).servers.find((s) => s.id === id);
  if (!server) throw new AuthError("AUTH_NOT_FOUND", id, `no server "${id}" in ${file}`);
  if (!server.url)
    throw new AuthError(
      "AUTH_NOT_FOUND",
      id,
      `server "${id}" is not a remote (HTTP) server: it has no login`,
    );
  return {
    id,
    url: server.url,
    transport: server.transport,
    headers: server.headers,
    ...(server.auth && { auth: server.auth }),
  };
}

/** The ID token in `file` (`-`: standard input), checked to be a JWT before anything is sent. */
function readIdToken(server: string, file: string): string {
  let token: string;
  try {
    token = readFileSync(file === "-" ? 0 : file, "utf8").trim();
  } catch (e) {
    throw new ConfigError(`--id-token-file: cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  idTokenClaims(server, token);
  return token;
}

const json = (value: unknown): void => void process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

export function register(program: Command): void {
  const auth = program
    .command("auth")
    .description("log in to remote MCP servers that ask for OAuth: login, logout, status")
    .addHelpText("after", `\n${WHERE}`);

  auth
    .command("login")
    .description(
      "log in to a remote server anew: prints the authorization URL (--open opens it), then waits for the " +
        "browser to come back to a callback on 127.0.0.1, or for the redirected URL or code to be pasted",
    )
    .argument("<server>", "the server's id in the hub config")
    .option("--open", "open the URL with PDA_BROWSER, BROWSER or the system's browser")
    .option("--client-id <id>", "a client registered with the authorization server beforehand")
    .option("--client-secret <secret>", "that client's secret, if it has one")
    .option(
      "--client-metadata-url <url>",
      "an HTTPS URL of a client ID metadata document for pda, used where the server supports them",
    )
    .addOption(
      new Option(
        "--grant <grant>",
        "client_credentials: a machine login with --client-id and its secret or --client-key, no browser",
      ).choices(["authorization_code", "client_credentials"]),
    )
    .option("--client-key <file>", "a PEM private key the client authenticates with (private_key_jwt)")
    .option("--client-key-alg <alg>", "that key's JWS algorithm (default ES256)")
    .option(
      "--id-token-file <file>",
      "for a server with auth.idp (cross-app access): a file holding your ID token from that IdP (- for stdin)",
    )
    .option("--scope <scope>", "scopes to ask for beyond those the server names (space-separated)")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      "\nExamples:\n  pda auth login notion --open\n  pda auth login corp --client-id pda-cli --client-secret $SECRET\n" +
        "  pda auth login ci --grant client_credentials --client-id robot --client-key robot.pem\n" +
        "  pda auth login crm --client-id pda-crm --client-secret $SECRET --id-token-file id_token.jwt\n",
    )
    .action(
      (
        id: string,
        opts: {
          open?: boolean;
          clientId?: string;
          clientSecret?: string;
          clientMetadataUrl?: string;
          grant?: "authorization_code" | "client_credentials";
          clientKey?: string;
          clientKeyAlg?: string;
          idTokenFile?: string;
          scope?: string;
          json?: boolean;
        },
        cmd: Command,
      ) =>
        runCommand(async () => {
          if ((opts.grant === "client_credentials" || opts.clientKey) && !opts.clientId)
            throw new ConfigError("--grant client_credentials and --client-key need --client-id");
          const server = remoteServer(cmd, id);
          if (server.auth?.idp && (opts.grant || opts.clientKey))
            throw new ConfigError(
              `server "${id}" signs in through its enterprise IdP (auth.idp): --grant and --client-key do not apply`,
            );
          if (opts.idTokenFile && !server.auth?.idp)
            throw new ConfigError(
              `--id-token-file is for a server with auth.idp in its config; "${id}" has none (cross-app access)`,
            );
          const idToken = opts.idTokenFile ? readIdToken(id, opts.idTokenFile) : undefined;
          const open = opts.open ? browserCommand() : process.env.PDA_BROWSER;
          const r = await login(server, {
            store: new TokenStore(),
            person: person({ out: process.stderr, open, paste: process.stdin }),
            clientId: opts.clientId,
            clientSecret: opts.clientSecret,
            clientMetadataUrl: opts.clientMetadataUrl,
            grant: opts.grant,
            clientKeyFile: opts.clientKey,
            clientKeyAlg: opts.clientKeyAlg,
            idToken,
            scope: opts.scope,
          });
          // The paste prompt may still hold stdin: nothing more is read.
          process.stdin.destroy();
          if (opts.json) return json(r);
          process.stdout.write(
            r.authorized
              ? `${chalk.green("logged in")} to ${id}${r.scope ? ` (scope: ${r.scope})` : ""}\n`
              : `${id} answered without asking for authorization: nothing stored\n`,
          );
        }),
    );

  auth
    .command("logout")
    .description("forget a server's tokens and client registration")
    .argument("<server>", "the server's id")
    .option("--json", "print the result as JSON")
    .action((id: string, opts: { json?: boolean }) =>
      runCommand(async () => {
        const removed = new TokenStore().remove(id);
        if (opts.json) return json({ server: id, removed });
        process.stdout.write(removed ? `logged out of ${id}\n` : `${id}: not logged in\n`);
      }),
    );

  auth
    .command("status")
    .description(
      "which servers pda holds a login for: scope, expiry, refreshable (exit 1 if [server] has none)",
    )
    .argument("[server]", "only this server")
    .option("--json", "print the logins as JSON")
    .action((id: string | undefined, opts: { json?: boolean }) =>
      runCommand(async () => {
        const store = new TokenStore();
        const all = store
          .list()
          .filter((f) => id === undefined || f.server === id)
          .map((f) => status(f, store));
        if (opts.json) json(all);
        else if (all.length === 0)
          process.stdout.write(id ? `${id}: not logged in\n` : `no logins (folder ${store.dir})\n`);
        for (const s of opts.json ? [] : all) {
          const state = !s.loggedIn
            ? chalk.dim("no token")
            : s.expired
              ? s.refreshable
                ? chalk.yellow("expired (refreshable)")
                : chalk.red("expired")
              : chalk.green("logged in");
          const extra = [s.scope && `scope ${s.scope}`, s.expiresAt && `until ${s.expiresAt}`]
            .filter(Boolean)
            .join(", ");
          process.stdout.write(
            `${chalk.bold(s.server.padEnd(14))} ${state}  ${chalk.dim(s.serverUrl)}${extra ? `  ${extra}` : ""}\n`,
          );
        }
        return id !== undefined && !all.some((s) => s.loggedIn) ? 1 : 0;
      }),
    );
}
