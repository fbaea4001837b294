/**
 * Per-server OAuth state on disk: `<user config folder>/auth/<server>.json`, 0600 in a 0700 folder, written
 * whole through a temporary file and a rename so a crash never leaves half a token. Never in the session
 * store: sessions are shared and exported, credentials are not.
 */
import { chmodSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type {
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from "@modelcontextprotocol/client";
import { z } from "zod";
import { userConfigDir } from "../../../config/index.js";
import { AuthError } from "./errors.js";

const Tokens = z.looseObject({ access_token: z.string(), token_type: z.string() });
const ClientInfo = z.looseObject({ client_id: z.string() });
const Discovery = z.looseObject({ authorizationServerUrl: z.string() });

/** One server's file. `serverUrl` ties it to the URL it was made for: another URL under the same name starts over. */
export const AuthFileSchema = z.object({
  version: z.literal(1),
  server: z.string(),
  serverUrl: z.string(),
  /** Registered by pda (dynamic registration or a metadata-document URL) or given at login (pre-registered). */
  client: ClientInfo.optional(),
  /** "login": given with `pda auth login --client-id`; kept across logins and never re-registered. */
  clientSource: z.enum(["registered", "login"]).optional(),
  /** A client ID metadata document URL given at login, offered when the server supports it. */
  clientMetadataUrl: z.string().optional(),
  /** client_credentials: a machine login with the client's own credentials, no person (given at login). */
  grant: z.enum(["authorization_code", "client_credentials"]).optional(),
  /** A PEM private key file the client authenticates with (private_key_jwt), and its algorithm. */
  clientKeyFile: z.string().optional(),
  clientKeyAlg: z.string().optional(),
  /** Cross-app access: the person's ID token from the server's enterprise IdP, exchanged for each new token. */
  idToken: z.string().optional(),
  tokens: Tokens.optional(),
  /** When the tokens were saved (ms since epoch): with expires_in, when they expire. */
  savedAt: z.number().optional(),
  /** Every scope asked for so far: a step-up asks for these plus the new ones. */
  scope: z.string().optional(),
  discovery: Discovery.optional(),
  codeVerifier: z.string().optional(),
});
export type AuthFile = z.infer<typeof AuthFileSchema>;

/** The typed views of the loosely checked parts (the SDK owns their full shape). */
export const asTokens = (f: AuthFile): StoredOAuthTokens | undefined =>
  f.tokens as StoredOAuthTokens | undefined;
export const asClient = (f: AuthFile): StoredOAuthClientInformation | undefined =>
  f.client as StoredOAuthClientInformation | undefined;
export const asDiscovery = (f: AuthFile): OAuthDiscoveryState | undefined =>
  f.discovery as OAuthDiscoveryState | undefined;

/** Discovery state as the SDK hands it over, checked for the one field the store relies on. */
export const fromDiscovery = (state: OAuthDiscoveryState): AuthFile["discovery"] => Discovery.parse(state);

/** The folder that holds every server's file: the user's config folder (XDG_CONFIG_HOME on Linux), `auth/`. */
export function defaultAuthDir(): string {
  return join(userConfigDir(), "auth");
}

/** A file name for any server name: nothing in it can leave the folder. */
function fileName(server: string): string {
  return `${encodeURIComponent(server)}.json`;
}

export class TokenStore {
  constructor(readonly dir: string = defaultAuthDir()) {}

  path(server: string): string {
    return join(this.dir, fileName(server));
  }

  /** The server's file, or undefined when there is none or it was made for another URL. */
  load(server: string, serverUrl?: string): AuthFile | undefined {
    let text: string;
    try {
      text = readFileSync(this.path(server), "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
    const parsed = AuthFileSchema.safeParse(JSON.parse(text));
    if (!parsed.success)
      throw new AuthError(
        "AUTH_FAILED",
        server,
        `${this.path(server)} is not a pda auth file (${parsed.error.issues[0]?.message ?? "invalid"}): ` +
          `remove it with \`pda auth logout ${server}\``,
      );
    return serverUrl === undefined || parsed.data.serverUrl === serverUrl ? parsed.data : undefined;
  }

  save(file: AuthFile): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700); // a folder made earlier by something else
    const target = this.path(file.server);
    const tmp = `${target}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(AuthFileSchema.parse(file), null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600); // the umask cannot widen it, but a stale tmp file could have other bits
    renameSync(tmp, target);
  }

  /** Forgets the server's tokens and client registration; true when there was a file. */
  remove(server: string): boolean {
    try {
      rmSync(this.path(server));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw e;
    }
  }

  /** Every server with a file, by name. */
  list(): AuthFile[] {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => n.endsWith(".json"));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw e;
    }
    return names
      .map((n) => this.load(decodeURIComponent(n.slice(0, -".json".length))))
      .filter((f): f is AuthFile => f !== undefined)
      .sort((a, b) => a.server.localeCompare(b.server));
  }
}
