import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";

/**
 * The SDK's JSON Schema validator, built at its first use. The SDK builds an Ajv (compiling its meta-schemas
 * and formats) in every Server's constructor, ~0.03 CPU-s before `initialize` can be answered; it is only
 * used to check a client's answers to elicitation, which the bundled servers rarely or never ask (#16).
 */
export function lazyValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return { getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema) };
}
