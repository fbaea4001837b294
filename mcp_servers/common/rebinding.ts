/**
 * DNS-rebinding protection for the bundled servers in `--http` mode. A web page on evil.example whose name is
 * re-pointed to 127.0.0.1 can reach a local server, but its requests carry `Host: evil.example` (and an Origin
 * of evil.example); a page POSTing across origins to 127.0.0.1 carries a foreign Origin. So Host, and Origin
 * when present, must name a loopback host (localhost, *.localhost, 127.0.0.0/8, ::1), the address the server
 * listens on, or a host allowed by `--allow-host` / PDA_MCP_ALLOWED_HOSTS; `*` turns the check off.
 * Port-agnostic, like the SDK's `hostHeaderValidation` middleware (which needs Express; its transport options
 * `allowedHosts` are deprecated, match `host:port` exactly and run only after a session is created).
 */
import type { IncomingHttpHeaders } from "node:http";
import { isIP } from "node:net";
import { nonPublicKind } from "./egress.js";

export const ALLOWED_HOSTS_ENV = "PDA_MCP_ALLOWED_HOSTS";

/** A host name without brackets or port, lower-cased: `[::1]:80` → `::1`. */
function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, "").toLowerCase();
}

function isLoopback(hostname: string): boolean {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return true;
  return isIP(hostname) !== 0 && nonPublicKind(hostname) === "loopback";
}

export class HostGuard {
  private readonly extra: Set<string>;
  private readonly any: boolean;

  /** `allowed`: more host names or addresses (no ports); `*` allows any host. */
  constructor(allowed: readonly string[] = []) {
    const names = allowed.map((h) => bare(h.trim())).filter(Boolean);
    this.any = names.includes("*");
    this.extra = new Set(names);
  }

  /** From `--allow-host a,b` (may repeat) in argv and PDA_MCP_ALLOWED_HOSTS, plus the listening host. */
  static fromArgs(
    argv: readonly string[],
    listenHost: string,
    env: NodeJS.ProcessEnv = process.env,
  ): HostGuard {
    const lists: string[] = [listenHost, env[ALLOWED_HOSTS_ENV] ?? ""];
    argv.forEach((arg, i) => {
      if (arg === "--allow-host") lists.push(argv[i + 1] ?? "");
      else if (arg.startsWith("--allow-host=")) lists.push(arg.slice("--allow-host=".length));
    });
    // A wildcard bind address is where the server listens, not a name clients send.
    const hosts = lists.flatMap((l) => l.split(",")).filter((h) => h !== "0.0.0.0" && h !== "::");
    return new HostGuard(hosts);
  }

  private allows(hostname: string): boolean {
    const name = bare(hostname);
    return this.any || isLoopback(name) || this.extra.has(name);
  }

  /** Why the request must be refused, or undefined when its Host and Origin are allowed. */
  refusal(headers: IncomingHttpHeaders): string | undefined {
    if (this.any) return undefined;
    const host = headers.host;
    if (!host) return "missing Host header";
    let hostname: string;
    try {
      hostname = new URL(`http://${host}`).hostname;
    } catch {
      return `invalid Host header: ${host}`;
    }
    if (!this.allows(hostname)) {
      return `Host ${host} is not allowed (DNS-rebinding protection); start the server with --allow-host ${bare(hostname)} to allow it`;
    }
    const origin = headers.origin;
    if (origin === undefined) return undefined;
    let originUrl: URL | undefined;
    try {
      originUrl = new URL(origin);
    } catch {
      originUrl = undefined;
    }
    if (!originUrl || !/^https?:$/.test(originUrl.protocol) || !this.allows(originUrl.hostname)) {
      return `Origin ${origin} is not allowed (DNS-rebinding protection)`;
    }
    return undefined;
  }
}
