/**
 * HTTPS_PROXY / HTTP_PROXY / NO_PROXY for every provider. Node's own fetch ignores them, so a client that
 * should go through a proxy gets undici's fetch with an EnvHttpProxyAgent (undici's fetch, not the global one:
 * a dispatcher only works with the fetch of the same undici). undici (~110 modules) is imported at the first
 * proxied request: a run without a proxy, or with a scripted model, never loads it (#16).
 */
import type { EnvHttpProxyAgent } from "undici";

export interface ProxiedFetch {
  fetch: typeof globalThis.fetch;
  /** The proxy in use, for messages. */
  proxy: string;
}

type Undici = typeof import("undici");

let undici: Promise<Undici> | undefined;
const agents = new Map<string, EnvHttpProxyAgent>();

/** A fetch that goes through the proxy the environment names, or undefined when none is set. */
export function proxiedFetch(env: NodeJS.ProcessEnv): ProxiedFetch | undefined {
  const httpsProxy = env.HTTPS_PROXY || env.https_proxy || undefined;
  const httpProxy = env.HTTP_PROXY || env.http_proxy || undefined;
  if (!httpsProxy && !httpProxy) return undefined;
  const noProxy = env.NO_PROXY ?? env.no_proxy ?? "";
  // "" (not undefined) so undici does not read process.env behind the injected env's back.
  const key = JSON.stringify([httpProxy, httpsProxy, noProxy]);
  const fetch = (async (input: Parameters<Undici["fetch"]>[0], init?: Parameters<Undici["fetch"]>[1]) => {
    const { EnvHttpProxyAgent, fetch: undiciFetch } = await (undici ??= import("undici"));
    let dispatcher = agents.get(key);
    if (!dispatcher) {
      dispatcher = new EnvHttpProxyAgent({
        httpProxy: httpProxy ?? "",
        httpsProxy: httpsProxy ?? "",
        noProxy,
      });
      agents.set(key, dispatcher);
    }
    return undiciFetch(input, { ...init, dispatcher });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, proxy: (httpsProxy ?? httpProxy)! };
}
