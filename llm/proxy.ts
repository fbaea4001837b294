/**
 * HTTPS_PROXY / HTTP_PROXY / NO_PROXY for every provider. Node's own fetch ignores them, so a client that
 * should go through a proxy gets undici's fetch with an EnvHttpProxyAgent (undici's fetch, not the global one:
 * a dispatcher only works with the fetch of the same undici).
 */
import { EnvHttpProxyAgent, fetch as undiciFetch } from "undici";

export interface ProxiedFetch {
  fetch: typeof globalThis.fetch;
  /** The proxy in use, for messages. */
  proxy: string;
}

const agents = new Map<string, EnvHttpProxyAgent>();

/** A fetch that goes through the proxy the environment names, or undefined when none is set. */
export function proxiedFetch(env: NodeJS.ProcessEnv): ProxiedFetch | undefined {
  const httpsProxy = env.HTTPS_PROXY || env.https_proxy || undefined;
  const httpProxy = env.HTTP_PROXY || env.http_proxy || undefined;
  if (!httpsProxy && !httpProxy) return undefined;
  const noProxy = env.NO_PROXY ?? env.no_proxy ?? "";
  // "" (not undefined) so undici does not read process.env behind the injected env's back.
  const key = JSON.stringify([httpProxy, httpsProxy, noProxy]);
  let agent = agents.get(key);
  if (!agent) {
    agent = new EnvHttpProxyAgent({ httpProxy: httpProxy ?? "", httpsProxy: httpsProxy ?? "", noProxy });
    agents.set(key, agent);
  }
  const dispatcher = agent;
  const fetch = ((input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
    undiciFetch(input, { ...init, dispatcher })) as unknown as typeof globalThis.fetch;
  return { fetch, proxy: (httpsProxy ?? httpProxy)! };
}
