/**
 * The SDK's OAuthClientProvider (v2, @modelcontextprotocol/client) for one remote server, backed by that
 * server's file in the TokenStore. It only keeps state: who opens the authorization URL and waits for the
 * person is flow.ts's job, so `redirectToAuthorization` records the URL and returns.
 */
import { randomBytes } from "node:crypto";
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

export class PdaOAuthProvider implements OAuthClientProvider {
  private file: AuthFile;
  private redirect: string | undefined;
  private verifier: string | undefined;
  private authorizationUrl: URL | undefined;
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
  useClient(opts: { clientId?: string; clientSecret?: string; clientMetadataUrl?: string }): void {
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

  get redirectUrl(): string {
    return this.redirect ?? NO_CALLBACK_YET;
  }

  get clientMetadataUrl(): string | undefined {
    return this.file.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "pda",
      client_uri: "https://github.com/pda-agent/pda",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
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
