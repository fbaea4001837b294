import { createRequire } from "node:module";
import type { jsonSchemaValidator } from "@modelcontextprotocol/server";
import type { AjvJsonSchemaValidator } from "@modelcontextprotocol/server/validators/ajv";

/** The SDK's Ajv-backed validator, loaded from node_modules at first use (the bundles leave it out: bundle.ts). */
export function loadAjvValidator(): AjvJsonSchemaValidator {
  const mod = createRequire(import.meta.url)(
    "@modelcontextprotocol/server/validators/ajv",
  ) as typeof import("@modelcontextprotocol/server/validators/ajv");
  return new mod.AjvJsonSchemaValidator();
}

/**
 * The SDK's JSON Schema validator, built at its first use. The SDK builds an Ajv (compiling its meta-schemas
 * and formats) in every Server's constructor, ~0.03 CPU-s before `initialize` can be answered; it is only
 * used to check a client's answers to elicitation, which the bundled servers never ask (#16). In HTTP mode the
 * modern era builds a server per request, so the cost would be paid on every call.
 */
export function lazyValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return { getValidator: (schema) => (ajv ??= loadAjvValidator()).getValidator(schema) };
}
