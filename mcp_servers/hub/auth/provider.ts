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
import type { IdpConfig } from "../config.js";
import { JWT_BEARER, crossAppClientNeeded, jwtBearerRequest, usableIdToken } from "./cross-app.js";
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
  /** The person's ID token from the server's enterprise IdP (`auth.idp`): cross-app access. */
  idToken?: string;
}

/** What the server's config says about its authorization. */
export interface ProviderOptions {
  /** The enterprise IdP whose ID token is exchanged for the server's tokens (cross-app access, no browser). */
  idp?: IdpConfig;
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
  /** Cross-app access: the authorization server and resource the SDK found (the ID-JAG's audience, resource). */
  private authorizationServer: string | undefined;
  private resource: string | undefined;

  constructor(
    readonly server: string,
    readonly serverUrl: string,
    private readonly store: TokenStore,
    private readonly opts: ProviderOptions = {},
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
    if (opts.idToken) this.update({ idToken: opts.idToken });
  }

  get accessToken(): string | undefined {
    return this.file.tokens?.access_token;
  }

  /** client_credentials or cross-app access: the SDK asks no one (a client without a redirect URL). */
  get nonInteractive(): boolean {
    return this.crossApp || this.file.grant === "client_credentials";
  }

  private get crossApp(): boolean {
    return this.opts.idp !== undefined;
  }

  /**
   * Cross-app access needs what only `pda auth login` gives (a client, an ID token): without them nothing is
   * sent (a registration or an exchange that cannot succeed), the error names that login instead.
   */
  checkLogin(): void {
    if (!this.crossApp) return;
    usableIdToken(this.server, this.file.idToken);
    if (!this.file.client) throw crossAppClientNeeded(this.server);
  }

  get redirectUrl(): string | undefined {
    return this.nonInteractive ? undefined : (this.redirect ?? NO_CALLBACK_YET);
  }

  /**
   * client_credentials and cross-app access (jwt-bearer with an ID-JAG from the IdP) ask for the token
   * themselves; an authorization code flow leaves it to the SDK.
   */
  async prepareTokenRequest(scope?: string): Promise<URLSearchParams | undefined> {
    if (this.opts.idp)
      return jwtBearerRequest({
        server: this.server,
        idp: this.opts.idp,
        idToken: usableIdToken(this.server, this.file.idToken),
        client: asClient(this.file),
        authorizationServerUrl: this.authorizationServer,
        resourceUrl: this.resource,
        scope,
      });
    if (!this.nonInteractive) return undefined;
    return new URLSearchParams({ grant_type: "client_credentials", ...(scope && { scope }) });
  }

  saveAuthorizationServerUrl(url: string): void {
    this.authorizationServer = url;
  }

  saveResourceUrl(url: string): void {
    this.resource = url;
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
    if (this.crossApp)
      return {
        client_name: "pda",
        redirect_uris: [],
        grant_types: [JWT_BEARER],
        token_endpoint_auth_method: "client_secret_basic",
        ...(this.file.scope && { scope: this.file.scope }),
      };
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
