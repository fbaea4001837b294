/**
 * The SDK's OAuthClientProvider (v2, @modelcontextprotocol/client) for one remote server, backed by that
 * server's file in the TokenStore. It only keeps state: who opens the authorization URL and waits for the
 * person is flow.ts's job, so `redirectToAuthorization` records the URL and returns.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createPrivateKeyJwtAuth, type AddClientAuthentication } from "@modelcontextprotocol/client";
import type {
  OAuthClientInformationContext,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from "@modelcontextprotocol/client";
import { asClient, asDiscovery, asTokens, fromDiscovery, type AuthFile, type TokenStore } from "./store.js";

/**
 * Stands in for the loopback callback until a flow starts one: with no redirect URL at all the SDK would take
 * the client for a non-interactive (client_credentials) one. Never registered: a flow sets the real one first.
 */
const NO_CALLBACK_YET = "http://127.0.0.1/callback";

/** What `pda auth login` may say about the client beforehand. */
export interface LoginClient {
  clientId?: string;
  clientSecret?: string;
  clientMetadataUrl?: string;
  grant?: "authorization_code" | "client_credentials";
  clientKeyFile?: string;
  clientKeyAlg?: string;
}

export class PdaOAuthProvider implements OAuthClientProvider {
  private file: AuthFile;
  private redirect: string | undefined;
  private verifier: string | undefined;
  private authorizationUrl: URL | undefined;
  /** A 2025-03-26 server whose authorization server metadata names another issuer (flow.ts runAuth). */
  legacyIssuer = false;
  /** The `state` sent with the last authorization request: the callback must bring it back. */
  expectedState: string | undefined;

  constructor(
    readonly server: string,
    readonly serverUrl: string,
    private readonly store: TokenStore,
  ) {
    this.file = store.load(server, serverUrl) ?? { version: 1, server, serverUrl };
  }

  /** The loopback callback of the flow about to start; a client registered for another one registers again. */
  useRedirect(url: string): void {
    this.redirect = url;
    const client = asClient(this.file);
    const registeredFor = client && "redirect_uris" in client ? client.redirect_uris : undefined;
    if (this.file.clientSource === "registered" && registeredFor && !registeredFor.includes(url)) {
      this.update({ client: undefined, clientSource: undefined });
    }
  }

  /** The URL the SDK asked the person to open, taken once. */
  takeAuthorizationUrl(): URL | undefined {
    const url = this.authorizationUrl;
    this.authorizationUrl = undefined;
    return url;
  }

  /** Every scope asked for so far. */
  get scope(): string | undefined {
    return this.file.scope;
  }

  rememberScope(scope: string | undefined): void {
    if (scope && scope !== this.file.scope) this.update({ scope });
  }

  /** Forgets the tokens (a new login) but keeps the client registration and what login was given. */
  forgetTokens(): void {
    this.update({ tokens: undefined, savedAt: undefined });
  }

  /** A pre-registered client and/or a client ID metadata document URL, from `pda auth login`. */
  useClient(opts: LoginClient): void {
    if (opts.grant) this.update({ grant: opts.grant });
    if (opts.clientKeyFile)
      this.update({ clientKeyFile: opts.clientKeyFile, clientKeyAlg: opts.clientKeyAlg ?? "ES256" });
    if (opts.clientId)
      this.update({
        client: {
          client_id: opts.clientId,
          ...(opts.clientSecret && { client_secret: opts.clientSecret }),
        },
        clientSource: "login",
      });
    if (opts.clientMetadataUrl) this.update({ clientMetadataUrl: opts.clientMetadataUrl });
  }

  get accessToken(): string | undefined {
    return this.file.tokens?.access_token;
  }

  /** client_credentials: the SDK asks no one (it takes a client without a redirect URL for a machine). */
  get nonInteractive(): boolean {
    return this.file.grant === "client_credentials";
  }

  get redirectUrl(): string | undefined {
    return this.nonInteractive ? undefined : (this.redirect ?? NO_CALLBACK_YET);
  }

  /** client_credentials asks for the token itself; an authorization code flow leaves it to the SDK. */
  prepareTokenRequest(scope?: string): URLSearchParams | undefined {
    if (!this.nonInteractive) return undefined;
    return new URLSearchParams({ grant_type: "client_credentials", ...(scope && { scope }) });
  }

  /** private_key_jwt with the key file given at login; else the SDK's own choice of client authentication. */
  get addClientAuthentication(): AddClientAuthentication | undefined {
    const { clientKeyFile, client } = this.file;
    if (!clientKeyFile || !client) return undefined;
    return createPrivateKeyJwtAuth({
      issuer: client.client_id,
      subject: client.client_id,
      privateKey: readFileSync(clientKeyFile, "utf8"),
      alg: this.file.clientKeyAlg ?? "ES256",
    });
  }

  get clientMetadataUrl(): string | undefined {
    return this.file.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const redirect = this.redirectUrl;
    return {
      client_name: "pda",
      redirect_uris: redirect ? [redirect] : [],
      grant_types: redirect ? ["authorization_code", "refresh_token"] : ["client_credentials"],
      response_types: redirect ? ["code"] : [],
      ...(this.file.scope && { scope: this.file.scope }),
    };
  }

  state(): string {
    this.expectedState = randomBytes(16).toString("base64url");
    return this.expectedState;
  }

  clientInformation(): StoredOAuthClientInformation | undefined {
    return asClient(this.file);
  }

  saveClientInformation(info: StoredOAuthClientInformation, _ctx?: OAuthClientInformationContext): void {
    this.update({
      client: info,
      clientSource: this.file.clientSource === "login" ? "login" : "registered",
    });
  }

  tokens(): StoredOAuthTokens | undefined {
    return asTokens(this.file);
  }

  saveTokens(tokens: StoredOAuthTokens): void {
    this.update({ tokens, savedAt: Date.now() });
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error("no PKCE code verifier: the authorization did not start here");
    return this.verifier;
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    // A client given at login is the person's to change: the authorization server's refusal is reported instead.
    const dropClient = (scope === "all" || scope === "client") && this.file.clientSource !== "login";
    if (dropClient) this.update({ client: undefined, clientSource: undefined });
    if (scope === "all" || scope === "tokens") this.forgetTokens();
    if (scope === "all" || scope === "verifier") this.verifier = undefined;
    if (scope === "all" || scope === "discovery") this.update({ discovery: undefined });
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.update({ discovery: fromDiscovery(state) });
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return asDiscovery(this.file);
  }

  private update(patch: Partial<AuthFile>): void {
    this.file = { ...this.file, ...patch };
    this.store.save(this.file);
  }
}
