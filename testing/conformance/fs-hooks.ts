/** Module hooks (see node20.ts): the conformance suite's `fs` import resolves to fs-shim.js on Node 20. */
import type { ResolveHook } from "node:module";

export const resolve: ResolveHook = (specifier, context, next) => {
  if (
    (specifier === "fs" || specifier === "node:fs") &&
    context.parentURL?.includes("/@modelcontextprotocol/conformance/")
  )
    return { url: new URL("./fs-shim.js", import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
};
