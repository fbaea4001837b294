/**
 * `fs` as the conformance suite imports it, on Node 20: Node's own, plus a `globSync` (Node 22) that only the
 * suite's tier-check uses, so the client and server scenarios run on the Node pda supports.
 */
import fs from "node:fs";
export * from "node:fs";
export default fs;
export function globSync(): never {
  throw new Error("fs.globSync needs Node 22 (only the conformance suite's tier-check uses it)");
}
