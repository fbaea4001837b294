/**
 * Which addresses the bundled servers may fetch from. A model picks the URLs, after reading pages anyone may
 * have written, so by default only public addresses are reached: loopback, private, link-local, unique-local,
 * multicast, unspecified, reserved and documentation ranges (also as IPv4-mapped and NAT64 addresses) are
 * refused. The check is on the resolved address, inside the connection's `lookup`, so the socket goes to the
 * very address that was checked (a DNS answer that changes between check and connect changes nothing).
 *
 * Opt-in, env PDA_WEB_ALLOW_PRIVATE: `1` allows every address; otherwise a comma-separated list of entries,
 * each a host name (`intranet.example`, `*.corp.example`), an IP address or a CIDR (`10.1.0.0/16`, `fd00::/8`);
 * a host name or IP may carry a port (`localhost:8888`, `[::1]:8080`) to allow that port only.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP, type LookupFunction } from "node:net";

export const ALLOW_ENV = "PDA_WEB_ALLOW_PRIVATE";

/** A URL whose address the policy does not allow. A tool failure, like FetchError. */
export class UrlRefused extends Error {
  constructor(
    readonly url: string,
    readonly address: string,
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}
/** Resolves a host name to all its addresses (the system resolver by default; tests inject one). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true });

// IANA special-purpose ranges that are not globally reachable, with the word the refusal uses.
const IPV4_RANGES: [string, number, string][] = [
  ["0.0.0.0", 8, "unspecified"], // 0.0.0.0 reaches the local host on Linux
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared (carrier-grade NAT)"], // also cloud metadata (100.100.100.200)
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"], // cloud metadata (169.254.169.254)
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"], // and the broadcast address
];
const IPV6_RANGES: [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::", 96, "IPv4-compatible"],
  ["64:ff9b:1::", 48, "NAT64 local-use"],
  ["100::", 64, "discard-only"],
  ["2001::", 23, "reserved"],
  ["2001:db8::", 32, "documentation"],
  ["2002::", 16, "6to4"],
  ["3fff::", 20, "documentation"],
  ["fc00::", 7, "unique-local"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

interface Range {
  list: BlockList;
  kind: string;
}

function subnet(address: string, prefix: number): BlockList {
  const list = new BlockList();
  list.addSubnet(address, prefix, isIP(address) === 6 ? "ipv6" : "ipv4");
  return list;
}

// BlockList matches IPv4 rules against IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) itself; the NAT64
// well-known prefix (64:ff9b::a.b.c.d) carries an IPv4 address too, so each IPv4 range is added in that form.
// Built at the first check, not at import: ~60 BlockLists cost a server's start time it needs to answer (#16).
let ranges: Range[] | undefined;
const buildRanges = (): Range[] => [
  ...IPV4_RANGES.map(([a, p, kind]) => ({ list: subnet(a, p), kind })),
  ...IPV6_RANGES.map(([a, p, kind]) => ({ list: subnet(a, p), kind })),
  ...IPV4_RANGES.map(([a, p, kind]) => {
    const [b0, b1, b2, b3] = a.split(".").map(Number) as [number, number, number, number];
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    return { list: subnet(`64:ff9b::${hex(b0, b1)}:${hex(b2, b3)}`, 96 + p), kind: `${kind} (NAT64)` };
  }),
];

/** The kind of non-public range `address` is in ("loopback", "private", ...), or undefined for a public one. */
export function nonPublicKind(address: string): string | undefined {
  const bare = address.replace(/%.*$/, ""); // fe80::1%eth0: the zone is not part of the address
  const family = isIP(bare);
  if (family === 0) return "unparsable"; // BlockList answers false for garbage: refuse instead
  const type = family === 6 ? "ipv6" : "ipv4";
  return (ranges ??= buildRanges()).find((r) => r.list.check(bare, type))?.kind;
}

interface Rule {
  /** Addresses this rule allows, or undefined for a host-name rule. */
  net?: BlockList;
  /** An exact host name, or a suffix starting with "." for `*.` entries. */
  host?: string;
  port?: number;
}

function parsePort(text: string | undefined, entry: string): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`bad port in ${entry}`);
  return port;
}

function addressRule(address: string, prefix: number | undefined, port: number | undefined): Rule {
  const family = isIP(address);
  const max = family === 6 ? 128 : 32;
  return { net: subnet(address, prefix ?? max), port };
}

function parseEntry(entry: string): Rule {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) {
    if (isIP(bracketed[1]!) !== 6) throw new Error(`not an IPv6 address: ${entry}`);
    return addressRule(bracketed[1]!, undefined, parsePort(bracketed[2], entry));
  }
  const cidr = /^([^/]+)\/(\d+)$/.exec(entry);
  if (cidr) {
    const family = isIP(cidr[1]!);
    const prefix = Number(cidr[2]);
    if (family === 0 || prefix > (family === 6 ? 128 : 32)) throw new Error(`not a CIDR: ${entry}`);
    return addressRule(cidr[1]!, prefix, undefined);
  }
  if (isIP(entry) === 6) return addressRule(entry, undefined, undefined);
  const hostPort = /^(\*\.)?([a-z0-9._-]+)(?::(\d+))?$/i.exec(entry);
  if (!hostPort) throw new Error(`not a host, address or CIDR: ${entry}`);
  const [, wildcard, name, port] = hostPort;
  if (isIP(name!) === 4 && !wildcard) return addressRule(name!, undefined, parsePort(port, entry));
  const host = name!.toLowerCase();
  return { host: wildcard ? `.${host}` : host, port: parsePort(port, entry) };
}

/** The host of `url` without IPv6 brackets: an IP address when the URL names one. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, "");
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

/** The host as a URL writes it (IPv6 in brackets) with its port, as an allow-list entry. */
function hostEntry(url: URL): string {
  return `${url.hostname}:${portOf(url)}`;
}

export class EgressPolicy {
  private constructor(
    private readonly allowAll: boolean,
    private readonly rules: readonly Rule[],
    private readonly resolve: Resolver,
  ) {}

  /** Public addresses only. */
  static readonly PUBLIC_ONLY = new EgressPolicy(false, [], systemResolver);

  /**
   * The policy from PDA_WEB_ALLOW_PRIVATE's value (see the file comment); unset, empty or `0` is public only.
   * Throws an Error naming the entry it cannot read.
   */
  static parse(spec: string | undefined, resolve: Resolver = systemResolver): EgressPolicy {
    const text = (spec ?? "").trim();
    if (text === "" || text === "0") return new EgressPolicy(false, [], resolve);
    if (text === "1" || text.toLowerCase() === "true") return new EgressPolicy(true, [], resolve);
    const entries = text.split(/[\s,]+/).filter(Boolean);
    return new EgressPolicy(false, entries.map(parseEntry), resolve);
  }

  /** This policy plus `url`'s host and port (for an endpoint the operator configured, not the model). */
  allowing(url: URL): EgressPolicy {
    const rule = isIP(hostOf(url))
      ? addressRule(hostOf(url), undefined, portOf(url))
      : { host: url.hostname.toLowerCase(), port: portOf(url) };
    return new EgressPolicy(this.allowAll, [...this.rules, rule], this.resolve);
  }

  /** Throws UrlRefused unless `address` (one of `url`'s host's addresses) may be reached. */
  check(url: URL, address: string, redirectedFrom?: URL): void {
    const kind = nonPublicKind(address);
    if (kind === undefined || this.allowed(url, address)) return;
    const bare = address.replace(/%.*$/, "");
    const literal = hostOf(url) === bare;
    const what = literal ? `${bare} (${kind}) is` : `${url.hostname} resolves to ${bare} (${kind}),`;
    const via = redirectedFrom ? ` (redirected from ${redirectedFrom.href})` : "";
    throw new UrlRefused(
      url.href,
      bare,
      kind,
      `refused to fetch ${url.href}${via}: ${what} not a public address. To allow it, start this ` +
        `server with ${ALLOW_ENV}=${hostEntry(url)} (or a CIDR, or 1 for every address).`,
    );
  }

  /**
   * The `lookup` to connect to `url` with: it resolves the host once, checks every address (one refused
   * address refuses the URL) and hands the connection exactly those. net.connect skips `lookup` for an IP
   * literal, so a literal host is checked here, before any connection.
   */
  lookupFor(url: URL, redirectedFrom?: URL): LookupFunction {
    if (isIP(hostOf(url))) this.check(url, hostOf(url), redirectedFrom);
    return (hostname, options, callback) => {
      const found = (all: ResolvedAddress[]) => {
        const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : options.family;
        const wanted = family ? all.filter((a) => a.family === family) : all;
        for (const a of wanted) this.check(url, a.address, redirectedFrom);
        if (wanted.length === 0) {
          throw Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" });
        }
        return wanted;
      };
      this.resolve(hostname)
        .then(found)
        .then(
          (wanted) =>
            options.all ? callback(null, wanted) : callback(null, wanted[0]!.address, wanted[0]!.family),
          (e: NodeJS.ErrnoException) => callback(e, ""),
        );
    };
  }

  private allowed(url: URL, address: string): boolean {
    if (this.allowAll) return true;
    const port = portOf(url);
    const bare = address.replace(/%.*$/, "");
    const type = isIP(bare) === 6 ? "ipv6" : "ipv4";
    const host = url.hostname.toLowerCase();
    return this.rules.some((r) => {
      if (r.port !== undefined && r.port !== port) return false;
      if (r.net) return r.net.check(bare, type);
      return r.host!.startsWith(".") ? host.endsWith(r.host!) : host === r.host;
    });
  }
}

/** The policy a server process starts with, from its environment; a value it cannot read ends it with exit 2. */
export function egressFromEnv(server: string): EgressPolicy {
  try {
    return EgressPolicy.parse(process.env[ALLOW_ENV]);
  } catch (e) {
    process.stderr.write(`${server}: ${ALLOW_ENV}: ${(e as Error).message}\n`);
    process.exit(2);
  }
}
